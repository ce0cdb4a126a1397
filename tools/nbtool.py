"""Course tooling for notebooks: execute in place, write student copies, check hygiene.

    python tools/nbtool.py execute notebooks/01_cache.ipynb [...]   # fresh kernel, top to bottom
    python tools/nbtool.py student [--out build/student]            # strip solutions
    python tools/nbtool.py check                                   # counts 1..N, no errors

Exercises: a code cell tagged `solution` holds its answer between the lines
`### BEGIN SOLUTION` and `### END SOLUTION`; the student copy replaces that block with
`raise NotImplementedError`. The cells tagged `check` right after it must fail in the student
copy and pass in the instructor notebook: under `make test`, nbval runs each exercise as
the student copy has it (an item `Cell N student copy`, conftest.py) just before the real
solution, in the same kernel (the notebooks in STUDENT_RUN_ALONE: a student copy run of
their own, tests/test_notebooks.py).

Cells tagged `instructor` (what to say or do in the room) exist only in the notebooks in
this repository: every copy made for learners (the student copy, the course site and its
downloads) is made through `public_copy`, which drops them.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "cachequeue"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
INSTRUCTOR = "instructor"
_SOLUTION = re.compile(
    r"^(?P<indent>[ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*$",
    re.MULTILINE | re.DOTALL,
)


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def execute(path: Path, *, allow_errors: bool = False, timeout: int = 900):
    """Run a notebook on a fresh `cachequeue` kernel with cwd = its folder; return the result.

    A set-up path: the servers are started first if they are not running (the kernel's
    `db.connect()` and `shared.connect()` only connect)."""
    from nbclient import NotebookClient

    from cachequeue import servers

    servers.start()

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, kernel_name=KERNEL, timeout=timeout, allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def _merge_streams(outputs: list) -> list:
    """Join consecutive chunks of one stream: the kernel splits a print at random points,
    which would make two runs of the same notebook differ byte for byte."""
    merged: list = []
    for out in outputs:
        last = merged[-1] if merged else None
        if (out.get("output_type") == "stream" and last is not None
                and last.get("output_type") == "stream" and last.get("name") == out.get("name")):
            last["text"] += out["text"]
        else:
            merged.append(out)
    return merged


def _tidy(nb) -> None:
    """Drop per-run noise that is not output: timing metadata, widget state, split streams."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.metadata.pop("collapsed", None)
            cell.outputs = _merge_streams(cell.outputs)


def cmd_execute(paths: list[Path]) -> int:
    for path in paths:
        nb = execute(path)
        _tidy(nb)
        nbformat.write(nb, path)
        print(f"executed {path.relative_to(ROOT)}")
    return 0


def strip_solutions(source: str) -> str:
    return _SOLUTION.sub(lambda m: f"{m['indent']}raise NotImplementedError", source)


def public_copy(nb):
    """A copy of `nb` without its `instructor` cells; everything else as committed."""
    copy = nbformat.from_dict(nb)
    copy.cells = [cell for cell in copy.cells if INSTRUCTOR not in tags(cell)]
    return copy


def student_copy(nb, *, keep_teaching_outputs: bool = False):
    """A public copy of `nb` with solution blocks replaced and every output cleared.

    With `keep_teaching_outputs` (the learner's own copies, `tools/study.py`), only the
    exercises' cells (tagged `solution` or `check`) lose their outputs and execution counts:
    the answer's output and the "检查通过" of its check go, the chapter's teaching outputs
    (tables, figures, the asserts' printouts) stay as committed."""
    copy = public_copy(nb)
    for cell in copy.cells:
        if cell.cell_type != "code":
            continue
        if "solution" in tags(cell):
            if BEGIN not in cell.source or END not in cell.source:
                raise ValueError(f"cell tagged solution lacks {BEGIN}/{END}: {cell.source[:60]!r}")
            cell.source = strip_solutions(cell.source)
        elif BEGIN in cell.source:
            raise ValueError(f"solution markers in a cell not tagged solution: {cell.source[:60]!r}")
        if not keep_teaching_outputs or tags(cell) & {"solution", "check"}:
            cell.outputs = []
            cell.execution_count = None
    return copy


# Notebooks whose exercises leave something behind before they reach the solution (the
# "try it once" line or the check cell writes first: submits jobs, sets a Redis key), so
# running the student copy of the exercise in the chapter's own kernel would change what
# the real run then shows. Their student copies run in a kernel of their own
# (tests/test_notebooks.py); every other notebook's run in nbval's kernel (conftest.py).
STUDENT_RUN_ALONE = {
    "03_persist_claim_lease.ipynb": "the check submits three jobs before it claims",
    "10_shared_cache_redis.ipynb": "the solution cell sets a lock key before it extends it",
}


def exercises(nb) -> list[dict]:
    """The exercises of `nb` as its student copy has them, one dict per `solution` cell:
    {"solution": i, "source": the student copy's source of that cell, "checks": [(j, the
    check cell's source), ...]}, with i and j counted over code cells (nbval's "Cell N").
    The check cells of an exercise are the code cells tagged `check` right after its
    solution; a check cell anywhere else is an error (it would belong to no exercise)."""
    student = {id(cell): copied for cell, copied in _public_pairs(nb)}
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    if any(id(c) not in student and tags(c) & {"solution", "check"} for c in code):
        raise ValueError("a cell tagged instructor cannot be part of an exercise")
    found, claimed = [], set()
    for i, cell in enumerate(code):
        if "solution" not in tags(cell):
            continue
        checks = []
        for j in range(i + 1, len(code)):
            if "check" not in tags(code[j]):
                break
            checks.append((j, student[id(code[j])].source))
            claimed.add(j)
        found.append({"solution": i, "source": student[id(cell)].source, "checks": checks})
    stray = [j for j, cell in enumerate(code) if "check" in tags(cell) and j not in claimed]
    if stray:
        raise ValueError(f"check cells {stray} do not follow a solution cell directly")
    return found


def _public_pairs(nb):
    """(instructor cell, the student copy's cell) for every cell the student copy keeps."""
    kept = [cell for cell in nb.cells if INSTRUCTOR not in tags(cell)]
    return zip(kept, student_copy(nb).cells, strict=True)


def cmd_student(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for path in notebook_paths():
        nbformat.write(student_copy(nbformat.read(path, as_version=4)), out / path.name)
        print(f"wrote {(out / path.name).relative_to(ROOT) if out.is_relative_to(ROOT) else out / path.name}")
    return 0


def hygiene_problems(path: Path) -> list[str]:
    """Why a committed notebook does not look like a fresh top-to-bottom run ([] if it does)."""
    nb = nbformat.read(path, as_version=4)
    problems = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    if counts != list(range(1, len(code) + 1)):
        problems.append(f"execution counts are {counts}, expected 1..{len(code)}")
    if nb.metadata.get("kernelspec", {}).get("name") != KERNEL:
        problems.append(f"kernelspec is not {KERNEL!r}")
    for i, cell in enumerate(code, 1):
        if any(o.get("output_type") == "error" for o in cell.outputs):
            problems.append(f"code cell {i} has an error output")
        for out in cell.outputs:
            data = out.get("data", {})
            if str(data.get("text/plain", "")).startswith("<Figure") and "image/png" not in data:
                problems.append(f"code cell {i} shows a figure without its image (%matplotlib inline?)")
    if not nb.cells or nb.cells[0].cell_type != "markdown" or not nb.cells[0].source.startswith("# "):
        problems.append("first cell is not a markdown '# title' cell")
    return problems


def cmd_check() -> int:
    bad = {p.name: hygiene_problems(p) for p in notebook_paths()}
    for name, problems in bad.items():
        for problem in problems:
            print(f"{name}: {problem}")
    return 1 if any(bad.values()) else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_exec = sub.add_parser("execute")
    p_exec.add_argument("paths", nargs="*", type=Path)
    p_student = sub.add_parser("student")
    p_student.add_argument("--out", type=Path, default=ROOT / "build" / "student")
    sub.add_parser("check")
    args = parser.parse_args(argv)
    if args.cmd == "execute":
        return cmd_execute([p.resolve() for p in args.paths] or notebook_paths())
    if args.cmd == "student":
        return cmd_student(args.out.resolve())
    return cmd_check()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
