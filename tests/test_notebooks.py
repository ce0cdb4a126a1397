"""Notebook checks beyond nbval: fresh-run hygiene, and exercises that really check.

nbval (run by `make test` with --nbval) re-executes each notebook and compares outputs;
these tests add what nbval cannot see: that the committed outputs came from one fresh
top-to-bottom run, and that every `check` cell fails when its solution is removed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("nbtool", ROOT / "tools" / "nbtool.py")
nbtool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtool)

NOTEBOOKS = nbtool.notebook_paths()
WITH_EXERCISES = [p for p in NOTEBOOKS if any(
    "check" in nbtool.tags(c) for c in nbtool.nbformat.read(p, as_version=4).cells)]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_outputs_come_from_a_fresh_run(path):
    assert nbtool.hygiene_problems(path) == []


def test_strip_solutions_keeps_indentation_and_surroundings():
    source = "x = 1\nif x:\n    ### BEGIN SOLUTION\n    y = 2\n    ### END SOLUTION\nprint(x)"
    assert nbtool.strip_solutions(source) == "x = 1\nif x:\n    raise NotImplementedError\nprint(x)"


def _errors(cell) -> list[str]:
    return [o["ename"] for o in cell.get("outputs", []) if o.get("output_type") == "error"]


@pytest.mark.db
@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_every_check_fails_on_the_student_copy_and_passes_here(path, tmp_path, monkeypatch,
                                                               database_url):
    instructor = nbtool.nbformat.read(path, as_version=4)
    checks = [i for i, c in enumerate(instructor.cells) if "check" in nbtool.tags(c)]
    for i in checks:
        assert _errors(instructor.cells[i]) == [], f"check cell {i} fails in the instructor copy"
        assert any("solution" in nbtool.tags(c) for c in instructor.cells[:i]), \
            f"check cell {i} has no solution cell before it"

    student = nbtool.student_copy(instructor)
    # Positions in the student copy: it has no `instructor` cells, so indices may shift.
    checks = [i for i, c in enumerate(student.cells) if "check" in nbtool.tags(c)]
    del student.cells[checks[-1] + 1:]  # nothing after the last check can change the verdict
    copy = tmp_path / path.name
    nbtool.nbformat.write(student, copy)
    # Its own schemas (ch04_student, ...): nbval may be running the instructor copy right now.
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "_student")
    executed = nbtool.execute(copy, allow_errors=True, timeout=300)
    for i in checks:
        assert _errors(executed.cells[i]), f"check cell {i} passes without its solution"
    solutions = [c for c in executed.cells if "solution" in nbtool.tags(c)]
    assert all("NotImplementedError" in _errors(c) for c in solutions)
