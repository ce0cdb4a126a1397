"""docs/instructor.md keeps up with the notebooks: one section per chapter, the same four
parts in each, and every check message it quotes is one the chapter's check cells print."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "instructor.md"
PARTS = ["时间安排", "现场演示", "学员常问", "练习：常见的错误答案"]
_spec = importlib.util.spec_from_file_location("nbtool", ROOT / "tools" / "nbtool.py")
nbtool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtool)


def _sections() -> dict[str, str]:
    """Chapter sections of the guide by number: '## NN title' up to the next '## '."""
    text = GUIDE.read_text(encoding="utf-8")
    found = {}
    for match in re.finditer(r"^## (\d\d) .*?(?=^## |\Z)", text, re.MULTILINE | re.DOTALL):
        assert match[1] not in found, f"two sections for chapter {match[1]}"
        found[match[1]] = match[0]
    return found


def _title(path: Path) -> str:
    return nbtool.nbformat.read(path, as_version=4).cells[0].source.splitlines()[0][2:].strip()


@pytest.mark.parametrize("path", nbtool.notebook_paths(), ids=lambda p: p.name)
def test_every_chapter_has_a_section_with_the_four_parts(path):
    sections = _sections()
    number = path.name[:2]
    assert number in sections, (
        f"docs/instructor.md has no section '## {_title(path)}': add one (timing, live moments, "
        "questions, wrong exercise answers) like the other chapters'")
    section = sections[number]
    assert section.splitlines()[0] == f"## {_title(path)}", "the heading is the notebook's title"
    assert re.findall(r"^### (.+)$", section, re.MULTILINE) == PARTS


def test_every_section_is_a_chapter_that_exists():
    numbers = {p.name[:2] for p in nbtool.notebook_paths()}
    assert set(_sections()) <= numbers


# An exception line as Python prints it ("TypeError: ...", "CacheBusy: ...",
# "InvalidDatetimeFormat: ..."): raised by the code under test, not a check's own message.
_EXCEPTION_LINE = re.compile(r"^[A-Z][A-Za-z]*: ")


def _quoted_check_messages(section: str) -> list[str]:
    """The assertion messages quoted in the second column of the wrong-answer table."""
    part = section.split("### 练习：常见的错误答案", 1)[1]
    quoted = []
    for row in re.findall(r"^\|[^|\n]+\|([^|\n]+)\|$", part, re.MULTILINE):
        for text in re.findall(r"`([^`]+)`", row):
            if not _EXCEPTION_LINE.match(text):
                quoted.append(text)
    return quoted


def _message_patterns(source: str) -> list[re.Pattern]:
    """One pattern per assertion message in a check cell: `assert ..., msg` and
    `raise AssertionError(msg)`; an f-string's {holes} match the values it formats."""
    try:
        tree = compile(source, "<check>", "exec",
                       flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError:  # IPython syntax; such a cell is compared by its words only
        return []
    messages = [node.msg for node in ast.walk(tree) if isinstance(node, ast.Assert) and node.msg]
    messages += [node.exc.args[0] for node in ast.walk(tree)
                 if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                 and getattr(node.exc.func, "id", None) == "AssertionError" and node.exc.args]
    patterns = []
    for message in messages:
        parts = message.values if isinstance(message, ast.JoinedStr) else [message]
        if all(isinstance(p, ast.Constant | ast.FormattedValue) for p in parts):
            patterns.append(re.compile("".join(
                re.escape(p.value) if isinstance(p, ast.Constant) else ".+" for p in parts)))
    return patterns


def _said_by_a_check(quote: str, checks: str, patterns: list[re.Pattern]) -> bool:
    """The words of a message ("…" cuts a quote short; ", got ..." is a value the check
    formats), or the whole message with its values, as a check prints it."""
    words = re.split(r",? got ", quote.split("…")[0])[0].strip()
    return words in checks or any(p.fullmatch(quote) for p in patterns)


def test_a_quote_is_matched_with_the_values_the_check_formats():
    source = 'assert ok, f"坏任务应在 3 次尝试后进入 failed，实际是 {s.state}/{s.attempts}"'
    patterns = _message_patterns(source)
    assert _said_by_a_check("坏任务应在 3 次尝试后进入 failed，实际是 pending/1", source, patterns)
    assert _said_by_a_check("坏任务应在 3 次尝试后进入 failed，实际是 …", source, patterns)
    assert not _said_by_a_check("坏任务应在 3 次尝试后进入 done，实际是 pending/1", source, patterns)
    assert not _said_by_a_check("好任务应在一次尝试后完成", source, patterns)


def _grader_sources(cells: list[str]) -> list[str]:
    """The source of each library grader a check cell calls (`ch03.check_claim_one(...)`,
    `ch01.check_summary_or_fallback(...)`, a module of cachequeue.course): the messages it
    raises are the ones the check prints."""
    from cachequeue import course

    found = []
    for module in course.CHAPTERS:
        name = module.rsplit(".", 1)[-1]
        if any(re.search(rf"\b{name}\.check\w*\(", cell) for cell in cells):
            path = ROOT / "lib" / "cachequeue" / "course" / Path(*module.split("."))
            found.append(path.with_suffix(".py").read_text(encoding="utf-8"))
    return found


@pytest.mark.parametrize("path", nbtool.notebook_paths(), ids=lambda p: p.name)
def test_quoted_check_messages_are_the_ones_the_checks_print(path):
    section = _sections().get(path.name[:2])
    if section is None:
        pytest.skip("no section (the test above fails for it)")
    cells = [c.source for c in nbtool.nbformat.read(path, as_version=4).cells
             if "check" in nbtool.tags(c)]
    cells += _grader_sources(cells)
    checks = "\n".join(cells)
    patterns = [p for source in cells for p in _message_patterns(source)]
    quoted = _quoted_check_messages(section)
    if not checks:
        assert quoted == [] and "本章没有练习" in section
        return
    assert quoted, "the table quotes what the check cells say"
    assert [m for m in quoted if not _said_by_a_check(m, checks, patterns)] == []
