"""The notebooks keep one Chinese term per concept (docs/glossary.md): retired terms stay out.

Each rule matches only phrases that cannot mean anything else: 格 after 设置/检查/练习 or in
这一格/下一格 (never 表格, 格式, 严格), 工作 only as 三个工作 or 工作号 (never 工作者), 合同 except
in the title of the sample data's contract checklist. The rules read every cell's source
(markdown and code), not outputs: outputs show the sample data as it is.
"""

from __future__ import annotations

import re
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
]


def retired_terms(text: str) -> list[tuple[str, str]]:
    """(the phrase found, what to write instead) for every retired phrase in `text`."""
    return [(m.group(0), r.use) for r in RULES for m in r.pattern.finditer(text)]


@pytest.mark.parametrize("text", [
    "运行下一格", "这一格的输出不参与比对", "检查格会失败", "设置格是固定开头", "练习格带有标签",
    "缓存的每一条边界都是一份合同", "加入别人正在进行的加载", "进行中的加载被忘掉", "在途的加载数",
    "三个工作都由工作者完成", "返回工作号", "PostgreSQL 作业队列", "尝试号与租约令牌",
    "把错误逐一做出来", "种子代码里的 viewer", "原书的练习", "原示例用 Map",
    "JavaScript 的 setTimeout",
])
def test_each_retired_phrase_is_found(text):
    assert retired_terms(text), f"no rule matched {text!r}"


@pytest.mark.parametrize("text", [
    "下一个单元格", "检查单元格", "输出格式", "价格与资格", "严格的表格", "工作者 a 领取任务",
    "两个工作者", "合同审查清单", "在途加载", "尝试编号", "复现竞态", "asyncio 的 call_later",
])
def test_current_terms_pass(text):
    assert retired_terms(text) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_use_no_retired_term(path):
    nb = nbformat.read(path, as_version=4)
    found = [(i, phrase, use) for i, cell in enumerate(nb.cells)
             for phrase, use in retired_terms(cell.source)]
    assert found == [], "retired terms (cell, phrase, write instead): " + "; ".join(
        f"cell {i}: {phrase!r} -> {use}" for i, phrase, use in found)
