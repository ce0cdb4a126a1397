"""The notebooks keep one Chinese term per concept (docs/glossary.md): retired terms stay out.

Each rule matches only phrases that cannot mean anything else: 格 after 设置/检查/练习 or in
这一格/下一格 (never 表格, 格式, 严格), 工作 only as 三个工作 or 工作号 (never 工作者), 合同 except
in the title of the sample data's contract checklist. The rules read every cell's source
(markdown and code), not outputs: outputs show the sample data as it is.

Terms retired in issue 19 (业务幂等键/业务身份, 断路, 接缝, 交谈, 回答 202) are enforced in every
notebook. A term retired while some chapter still uses it goes into PENDING, notebook by
notebook, with the count it may still have: a notebook with more fails, and an entry that
is no longer needed fails too, so the list shrinks back to nothing (it is empty now).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@dataclass(frozen=True)
class Rule:
    use: str
    pattern: re.Pattern


def rule(use: str, pattern: str) -> Rule:
    return Rule(use, re.compile(pattern))


_NOT_CELL = "(?![式外局子言])"
RULES = [
    rule("单元格", rf"(?:设置|检查|练习|答案|代码|输出|文字)格{_NOT_CELL}"),
    rule("单元格", rf"[这那下上每某前后同哪]一格{_NOT_CELL}"),
    rule("契约 / 约定", r"合同(?!审查清单)"),
    rule("在途加载", r"(?:进行中|正在进行|在途)的加载"),
    rule("任务", r"[一二三四五六七八九十两几每个这那]个工作(?![者日时量区流])|工作(?:号|编号|队列)"),
    rule("任务", r"作业"),
    rule("尝试编号", r"尝试号"),
    rule("复现", r"做出来"),
    rule("the content itself, not the source material", r"种子代码|原书|原示例"),
    rule("asyncio call_later / threading.Timer", r"setTimeout"),
    rule("业务键", r"业务幂等键|业务身份"),
    rule("熔断", r"断路"),
    rule("扩展点", r"接缝"),
    rule("通信", r"交谈"),
    rule("返回 202", r"回答\s*(?:HTTP\s*)?202"),
]

# (notebook, phrase): how many times the phrase may still occur there (see the docstring).
PENDING: dict[tuple[str, str], int] = {}


def retired_terms(text: str) -> list[tuple[str, str]]:
    """(the phrase found, what to write instead) for every retired phrase in `text`."""
    return [(m.group(0), r.use) for r in RULES for m in r.pattern.finditer(text)]


@pytest.mark.parametrize("text", [
    "运行下一格", "这一格的输出不参与比对", "检查格会失败", "设置格是固定开头", "练习格带有标签",
    "缓存的每一条边界都是一份合同", "加入别人正在进行的加载", "进行中的加载被忘掉", "在途的加载数",
    "三个工作都由工作者完成", "返回工作号", "PostgreSQL 作业队列", "尝试号与租约令牌",
    "把错误逐一做出来", "种子代码里的 viewer", "原书的练习", "原示例用 Map",
    "JavaScript 的 setTimeout",
    "外部副作用需要业务幂等键", "用业务身份作幂等键", "一次失败之后不再访问 Redis（断路）", "断路器打开以后",
    "通过几个接缝接进来", "只通过套接字和它们交谈", "然后回答 202 Accepted", "服务在回答 202 之前",
    "才可以回答 HTTP 202",
])
def test_each_retired_phrase_is_found(text):
    assert retired_terms(text), f"no rule matched {text!r}"


@pytest.mark.parametrize("text", [
    "下一个单元格", "检查单元格", "输出格式", "价格与资格", "严格的表格", "工作者 a 领取任务",
    "两个工作者", "合同审查清单", "在途加载", "尝试编号", "复现竞态", "asyncio 的 call_later",
    "外部副作用需要业务键", "幂等键", "熔断器打开以后", "路径", "通过几个扩展点接进来",
    "和它们通信", "然后返回 202 Accepted", "回答“已有的结果能否复用”", "服务先答复",
])
def test_current_terms_pass(text):
    assert retired_terms(text) == []


def _found(path: Path) -> list[tuple[int, str, str]]:
    nb = nbformat.read(path, as_version=4)
    return [(i, phrase, use) for i, cell in enumerate(nb.cells)
            for phrase, use in retired_terms(cell.source)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_use_no_retired_term(path):
    allowed = Counter({phrase: n for (name, phrase), n in PENDING.items() if name == path.name})
    found = []
    for i, phrase, use in _found(path):
        if allowed[phrase] > 0:
            allowed[phrase] -= 1
        else:
            found.append((i, phrase, use))
    assert found == [], "retired terms (cell, phrase, write instead): " + "; ".join(
        f"cell {i}: {phrase!r} -> {use}" for i, phrase, use in found)


def test_pending_occurrences_are_still_there():
    seen = Counter((path.name, phrase) for path in NOTEBOOKS for _, phrase, _ in _found(path))
    stale = {key: n for key, n in PENDING.items() if seen[key] < n}
    assert stale == {}, f"fixed since: lower or remove these PENDING entries: {stale}"
