"""The graders of chapters 01 and 02: realistic wrong answers fail with their message,
right answers that differ from the reference pass, and a second run gives the same verdict."""

from __future__ import annotations

import asyncio
import functools
import hashlib

import pytest

from cachequeue.cache import CacheBusy, cache_key
from cachequeue.course.app.summariser import SummariserError
from cachequeue.course.graders import ch01, ch02

FALLBACK = "摘要生成中，请稍后刷新"


def run(coro):
    return asyncio.run(coro)


# ---- chapter 01: summary_or_fallback ---------------------------------------------------

async def reference(cache, model, doc_id, text):
    try:
        return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=30)
    except CacheBusy:
        return FALLBACK


async def other_right(cache, model, doc_id, text):
    """Other names, a partial instead of a lambda, another key prefix, the error bound."""
    loader = functools.partial(model.asummarise, text)
    try:
        value = await cache.get_or_load(("summary", doc_id), loader, ttl=30.0)
    except CacheBusy as busy:
        del busy
        value = FALLBACK
    return value


async def catches_everything(cache, model, doc_id, text):
    try:
        return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=30)
    except Exception:
        return FALLBACK


async def catches_model_errors_too(cache, model, doc_id, text):
    try:
        return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=30)
    except (CacheBusy, SummariserError):
        return FALLBACK


async def no_catch(cache, model, doc_id, text):
    return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=30)


async def retries_once(cache, model, doc_id, text):
    try:
        return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=30)
    except CacheBusy:
        await asyncio.sleep(0)
        return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=30)


async def bypasses_cache(cache, model, doc_id, text):
    return await model.asummarise(text)


async def one_key(cache, model, doc_id, text):
    try:
        return await cache.get_or_load("doc", lambda: model.asummarise(text), ttl=30)
    except CacheBusy:
        return FALLBACK


async def counts_pending(cache, model, doc_id, text):
    if cache.pending >= cache.max_pending:
        return FALLBACK
    return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=30)


async def ttl_sixty(cache, model, doc_id, text):
    try:
        return await cache.get_or_load(f"doc:{doc_id}", lambda: model.asummarise(text), ttl=60)
    except CacheBusy:
        return FALLBACK


@pytest.mark.parametrize("answer", [reference, other_right])
def test_ch01_right_answers_pass_twice(answer):
    for _ in range(2):
        assert run(ch01.check_summary_or_fallback(answer, FALLBACK)) == "检查通过"


@pytest.mark.parametrize(("answer", "message"), [
    (catches_everything, "模型失败必须交给调用方，不能变成 FALLBACK"),
    (catches_model_errors_too, "模型失败必须交给调用方，不能变成 FALLBACK"),
    (no_catch, "缓存忙（CacheBusy）没有被接住"),
    (retries_once, "缓存忙（CacheBusy）没有被接住"),
    (bypasses_cache, "两个加载在途时，第三篇文档应得到 FALLBACK"),
    (one_key, "文档 1 和文档 2 应各由一次共享的加载得到摘要"),
    (counts_pending, "文档 1 和文档 2 应各由一次共享的加载得到摘要"),
    (ttl_sixty, "ttl 应为 30 秒"),
])
def test_ch01_wrong_answers_fail_with_their_message_every_time(answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            run(ch01.check_summary_or_fallback(answer, FALLBACK))


def test_ch01_the_stub_fails():
    async def stub(cache, model, doc_id, text):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        run(ch01.check_summary_or_fallback(stub, FALLBACK))


# ---- chapter 02: key_v2 -----------------------------------------------------------------
# Each answer is defined in a namespace of its own, as a notebook defines it: the grader
# swaps that namespace's TEMPLATE and INSTRUCTION for a moment.

NOTEBOOK = {
    "TEMPLATE": 2,
    "INSTRUCTION": "用一句话概括，并标出涉及权限审计的计划。",
    "cache_key": cache_key,
    "hashlib": hashlib,
}

ANSWERS = {
    "reference": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, lang=language, tpl=TEMPLATE, private={"instruction": INSTRUCTION})
""",
    "prompt_name": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, language=language, template=TEMPLATE,
                     private={"prompt": INSTRUCTION})
""",
    "no_lang": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, tpl=TEMPLATE, private={"instruction": INSTRUCTION})
""",
    "tpl_str": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, lang=language, tpl=str(TEMPLATE), private={"instruction": INSTRUCTION})
""",
    "clear_instruction": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, lang=language, tpl=TEMPLATE, instruction=INSTRUCTION)
""",
    "hand_hash": """
def key_v2(document, view, language):
    digest = hashlib.sha256(INSTRUCTION.encode()).hexdigest()[:32]
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, lang=language, tpl=TEMPLATE, instruction=digest)
""",
    "literal_instruction": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, lang=language, tpl=TEMPLATE,
                     private={"instruction": "用一句话概括，并标出涉及权限审计的计划。"})
""",
    "literal_template": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer=view, lang=language, tpl=2, private={"instruction": INSTRUCTION})
""",
    "member_view": """
def key_v2(document, view, language):
    return cache_key(tenant=document.tenant_id, document=document.id, version=document.version,
                     viewer="member", lang=language, tpl=TEMPLATE, private={"instruction": INSTRUCTION})
""",
    "fixed_identity": """
def key_v2(document, view, language):
    return cache_key(tenant=1, document=42, version=3,
                     viewer=view, lang=language, tpl=TEMPLATE, private={"instruction": INSTRUCTION})
""",
    "fixed_tenant": """
def key_v2(document, view, language):
    return cache_key(tenant=1, document=document.id, version=document.version,
                     viewer=view, lang=language, tpl=TEMPLATE, private={"instruction": INSTRUCTION})
""",
}


def answer(name: str):
    namespace = dict(NOTEBOOK)
    exec(ANSWERS[name], namespace)
    return namespace["key_v2"], namespace


@pytest.mark.parametrize("name", ["reference", "prompt_name"])
def test_ch02_right_answers_pass_twice_and_leave_the_namespace_as_it_was(name):
    key_v2, namespace = answer(name)
    for _ in range(2):
        assert run(ch02.check_key_v2(key_v2)) == "检查通过"
    assert {k: namespace[k] for k in ("TEMPLATE", "INSTRUCTION")} == {
        k: NOTEBOOK[k] for k in ("TEMPLATE", "INSTRUCTION")}


@pytest.mark.parametrize(("name", "message"), [
    ("no_lang", "语言与视图都应当各有自己的条目"),
    ("member_view", "语言与视图都应当各有自己的条目"),
    ("tpl_str", "模板版本应当是整数维度"),
    ("clear_instruction", "私有指令不能以明文出现在键里"),
    ("hand_hash", "指令决定结果：它应当通过 cache_key 的 private= 进入键"),
    ("literal_instruction", "换一段 INSTRUCTION，键应当跟着变"),
    ("literal_template", "换一个 TEMPLATE，键应当跟着变"),
    ("fixed_identity", r"不能写死：缓存里只有 \[\(1, 42, 3\)\]"),
    ("fixed_tenant", r"不能写死：缓存里只有 \[\(1, 42, 3\), \(1, 42, 4\), \(1, 44, 1\)\]"),
])
def test_ch02_wrong_answers_fail_with_their_message_every_time(name, message):
    key_v2, namespace = answer(name)
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            run(ch02.check_key_v2(key_v2))
    assert namespace["INSTRUCTION"] == NOTEBOOK["INSTRUCTION"] and namespace["TEMPLATE"] == 2


def test_ch02_says_which_cell_to_rerun_when_the_names_are_missing():
    namespace = {"cache_key": cache_key}
    exec(ANSWERS["reference"], namespace)
    with pytest.raises(AssertionError, match="先重新运行上面定义 TEMPLATE 与 INSTRUCTION 的单元格"):
        run(ch02.check_key_v2(namespace["key_v2"]))
