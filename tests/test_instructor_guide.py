"""docs/instructor.md keeps up with the notebooks: one section per chapter, the same four
parts in each, and every check message it quotes is one the chapter's check cells print."""

from __future__ import annotations

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


def _quoted_check_messages(section: str) -> list[str]:
    """The assertion messages quoted in the second column of the wrong-answer table."""
    part = section.split("### 练习：常见的错误答案", 1)[1]
    quoted = []
    for row in re.findall(r"^\|[^|\n]+\|([^|\n]+)\|$", part, re.MULTILINE):
        for text in re.findall(r"`([^`]+)`", row):
            if not re.match(r"^[A-Z]\w*(Error|Busy): ", text) and text != "检查格的提示":
                # "..., got pending/1": the check formats the value it got; compare the words
                quoted.append(re.split(r",? got ", text.split("…")[0])[0].strip())
    return quoted


@pytest.mark.parametrize("path", nbtool.notebook_paths(), ids=lambda p: p.name)
def test_quoted_check_messages_are_the_ones_the_checks_print(path):
    section = _sections().get(path.name[:2])
    if section is None:
        pytest.skip("no section (the test above fails for it)")
    checks = "\n".join(c.source for c in nbtool.nbformat.read(path, as_version=4).cells
                       if "check" in nbtool.tags(c))
    quoted = _quoted_check_messages(section)
    if not checks:
        assert quoted == [] and "本章没有练习" in section
        return
    assert quoted, "the table quotes what the check cells say"
    assert [m for m in quoted if m not in checks] == []
