"""Chapter 02's exercise: `key_v2(document, view, language)` keys a summary made with
template `TEMPLATE` and the private `INSTRUCTION`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...cache import LoadingCache, parse_key
from ...checks import check_callable
from ...clock import ManualClock
from ..app.documents import DocumentStore
from ..app.reading import SummaryReader
from ..app.summariser import Summariser
from ..app.tenancy import tenant_two_store

__all__ = ["check_key_v2"]

ADMIN, MEMBER, THEIR_MEMBER = 10, 11, 21  # 王敏 and 李雷 (tenant 1), 钱助理 (tenant 2)
# What the check swaps in for the notebook's INSTRUCTION: the key must follow it.
OTHER_INSTRUCTION = "列出三条风险，每条不超过二十字。"
_FIXED = ("tenant", "document", "version", "viewer", "private")
_RERUN = "先重新运行上面定义 TEMPLATE 与 INSTRUCTION 的单元格，再运行练习单元格和检查单元格"


@contextmanager
def _swapped(namespace: dict[str, Any], **values: Any) -> Iterator[None]:
    """Set names of the learner's namespace for a moment; put the old values back."""
    old = {name: namespace[name] for name in values}
    namespace.update(values)
    try:
        yield
    finally:
        namespace.update(old)


def _fragments(text: str, size: int = 2) -> set[str]:
    return {text[i:i + size] for i in range(len(text) - size + 1)}


def _key_of(key_v2: Callable[..., Any], view: str = "member", language: str = "zh") -> str:
    document = DocumentStore.from_sample().document(42)
    return key_v2(document, view, language)


def _check_key(key: str, template: Any, instruction: str) -> None:
    fields = parse_key(key)
    assert (fields["tenant"], fields["document"], fields["version"]) == (1, 42, 3), (
        "租户、文档与版本都应当在键里，取自 document.tenant_id、document.id、document.version"
        "（第 1 节）")
    assert not _fragments(instruction) & _fragments(key), (
        "私有指令不能以明文出现在键里：用 private= 传入，它只以哈希出现（第 5 节）")
    assert "private" in fields, (
        "指令决定结果：它应当通过 cache_key 的 private= 进入键（映射里的名字随你取），"
        "以哈希出现（第 5 节）")
    extra = {name: value for name, value in fields.items() if name not in _FIXED}
    if template not in extra.values():
        assert str(template) not in map(str, extra.values()), (
            "模板版本应当是整数维度（tpl=TEMPLATE），不要转成字符串：\"2\" 与 2 是两个键（第 1 节）")
        raise AssertionError("模板版本（整数）应当在键里：cache_key(..., tpl=TEMPLATE)（第 8 节的题目；第 1 节：每个决定结果的因素都是键的一个维度）")


async def check_key_v2(key_v2: Callable[..., Any]) -> str:
    """Grade `key_v2`: read document 42 in three variants (member zh, member en, admin zh),
    check each key (tenant, document, version, an integer template dimension, the
    instruction only as a digest), swap the notebook's TEMPLATE and INSTRUCTION for a
    moment to see the key follow them, then read a new version of 42, document 44 and
    tenant 2's document 42: four identities in the cache."""
    check_callable(key_v2, "key_v2")
    namespace = getattr(key_v2, "__globals__", None)
    assert namespace is not None and {"TEMPLATE", "INSTRUCTION"} <= namespace.keys(), _RERUN
    template, instruction = namespace["TEMPLATE"], namespace["INSTRUCTION"]
    assert template == 2 and isinstance(instruction, str) and instruction, _RERUN

    store, cache = DocumentStore.from_sample(), LoadingCache(clock=ManualClock())
    reader = SummaryReader(store, cache, Summariser(), key=key_v2)
    zh = await reader.read(MEMBER, 42, "zh")
    en = await reader.read(MEMBER, 42, "en")
    await reader.read(ADMIN, 42, "zh")
    held = cache.keys()
    assert len(held) == 3, (
        f"语言与视图都应当各有自己的条目：三次读取（成员中文、成员英文、管理员中文）只留下 "
        f"{len(held)} 个键；用参数 view 与 language（第 2 节、第 4 节）")
    assert zh.text != en.text, "中文请求与英文请求不能共用一个结果（第 2 节）"
    for key in held:
        _check_key(key, template, instruction)

    before = _key_of(key_v2)
    with _swapped(namespace, INSTRUCTION=OTHER_INSTRUCTION):
        other_instruction = _key_of(key_v2)
    with _swapped(namespace, TEMPLATE=template + 1):
        other_template = _key_of(key_v2)
    assert other_instruction != before, (
        "指令决定结果：换一段 INSTRUCTION，键应当跟着变；用名字 INSTRUCTION，"
        "不要把指令抄成字面量，也不要漏掉 private=（第 5 节）")
    assert OTHER_INSTRUCTION[:4] not in other_instruction, "私有指令不能以明文出现在键里（第 5 节）"
    assert other_template != before, (
        "换一个 TEMPLATE，键应当跟着变：用名字 TEMPLATE，不要把 2 写死（第 6 节）")

    # Other inputs: a new version of 42, document 44, and tenant 2's own document 42.
    store.publish(42, "全年只做一件事：把搜索与权限审计做扎实。")
    await reader.read(MEMBER, 42, "zh")
    await reader.read(MEMBER, 44, "zh")
    await SummaryReader(tenant_two_store(), cache, Summariser(), key=key_v2).read(
        THEIR_MEMBER, 42, "zh")
    identities = sorted({(f["tenant"], f["document"], f["version"])
                         for f in map(parse_key, cache.keys())})
    assert identities == [(1, 42, 3), (1, 42, 4), (1, 44, 1), (2, 42, 3)], (
        f"租户、文档与版本要取自 document（tenant_id、id、version），不能写死：缓存里只有 "
        f"{identities}（第 2 节、第 3 节）")
    return "检查通过"
