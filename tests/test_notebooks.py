"""Notebook checks beyond nbval: fresh-run hygiene, and exercises that really check.

nbval (run by `make test` with --nbval) re-executes each notebook and compares outputs;
these tests add what nbval cannot see: that the committed outputs came from one fresh
top-to-bottom run. That every `check` cell fails when its solution is removed is shown in
the same nbval run: before each solution cell, an item `Cell N student copy` (conftest.py)
runs the exercise as the student copy has it in the notebook's kernel; the tests here show
that every check cell is covered by those items and that such an item can fail.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
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


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_every_check_follows_its_solution_and_passes_here(path):
    """What the student-copy items (conftest.py) rely on: every check cell is one of the
    check cells right after a solution cell, passed in the committed run, and the student
    copy has the solution block replaced and the checks unchanged."""
    instructor = nbtool.nbformat.read(path, as_version=4)
    code = [c for c in instructor.cells if c.cell_type == "code"]
    exercises = nbtool.exercises(instructor)  # ValueError for a check that follows no solution
    checks = [j for e in exercises for j, _ in e["checks"]]
    assert checks == [j for j, c in enumerate(code) if "check" in nbtool.tags(c)]
    for exercise in exercises:
        assert exercise["checks"], f"solution cell {exercise['solution']} has no check after it"
        assert "raise NotImplementedError" in exercise["source"]
        assert nbtool.BEGIN not in exercise["source"]
        for j, source in exercise["checks"]:
            assert source == code[j].source
            assert _errors(code[j]) == [], f"check cell {j} fails in the instructor copy"


def _notebook(cells):
    nb = nbtool.nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": nbtool.KERNEL, "display_name": "Python (cachequeue)",
                                 "language": "python"}
    nb.cells = [nbtool.nbformat.v4.new_markdown_cell("# A title")]
    for source, tags in cells:
        cell = nbtool.nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


@pytest.mark.db
@pytest.mark.redis  # the kernel reaches both servers, as the notebooks do
@pytest.mark.parametrize("path", [p for p in WITH_EXERCISES if p.name in nbtool.STUDENT_RUN_ALONE],
                         ids=lambda p: p.name)
def test_every_check_fails_on_the_student_copy_run_alone(path, tmp_path, monkeypatch,
                                                         database_url):
    """For the notebooks whose exercises write before they reach the solution: the whole
    student copy, up to its last check, in a kernel of its own."""
    student = nbtool.student_copy(nbtool.nbformat.read(path, as_version=4))
    # Positions in the student copy: it has no `instructor` cells, so indices may shift.
    checks = [i for i, c in enumerate(student.cells) if "check" in nbtool.tags(c)]
    del student.cells[checks[-1] + 1:]  # nothing after the last check can change the verdict
    copy = tmp_path / path.name
    nbtool.nbformat.write(student, copy)
    # Its own schemas (ch03_student, ...): nbval may be running the instructor copy right now.
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "_student")
    executed = nbtool.execute(copy, allow_errors=True, timeout=300)
    for i in checks:  # failing because it reached the missing solution, not for another reason
        assert "NotImplementedError" in _errors(executed.cells[i]), \
            f"check cell {i} does not fail on the missing solution: {_errors(executed.cells[i])}"
    solutions = [c for c in executed.cells if "solution" in nbtool.tags(c)]
    assert all("NotImplementedError" in _errors(c) for c in solutions)


def test_the_notebooks_run_alone_exist_and_have_exercises():
    assert set(nbtool.STUDENT_RUN_ALONE) <= {p.name for p in WITH_EXERCISES}


def test_a_student_copy_item_runs_before_each_solution_and_fails_a_check_that_needs_none():
    """The check of the check: in a notebook of two exercises, each solution cell gets an
    item just before it (marked `db` like the notebook's cells: `-m db` keeps them all);
    the exercise whose check needs its solution passes, the one whose check does not is
    reported, and nbval still runs every real cell."""
    nb = _notebook([
        ("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
         "double(1)", ["solution"]),
        ("assert double(2) == 4", ["check"]),
        ("def half(x):\n    ### BEGIN SOLUTION\n    return x / 2\n    ### END SOLUTION\n"
         "half(1)", ["solution"]),
        ("assert 1 + 1 == 2  # checks nothing of half()", ["check"]),
    ])
    folder = Path(tempfile.mkdtemp(dir=ROOT / "build" if (ROOT / "build").is_dir() else ROOT,
                                   prefix="nbcheck-"))
    try:
        (folder / "00_probe.ipynb").write_text(nbtool.nbformat.writes(nb))
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-v", "-p", "nbval", "--nbval-lax", "-m", "db",
             str(folder / "00_probe.ipynb")],  # nbval only: no other plugin to load
            cwd=ROOT, capture_output=True, text=True, timeout=300,
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    ran = re.findall(r"00_probe(?:\.|::)ipynb::(.+?) (PASSED|FAILED)", done.stdout)
    assert ran == [("Cell 0 student copy", "PASSED"), ("Cell 0", "PASSED"), ("Cell 1", "PASSED"),
                   ("Cell 2 student copy", "FAILED"), ("Cell 2", "PASSED"), ("Cell 3", "PASSED")
                   ], done.stdout
    assert "check cell 3 passes without its solution" in done.stdout
