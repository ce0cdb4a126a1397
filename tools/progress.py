"""Which exercises of the learner's own copies pass, chapter by chapter (`make progress`).

    python tools/progress.py [03 06 ...] [--dir my-notebooks] [--timeout 900] [--json]

Each chapter copy in the folder (`NN_name.ipynb`; not the `.new` versions beside them) is
read, executed top to bottom in memory on a fresh `cachequeue` kernel whose working folder is
the copy's own, and dropped: the learner's files are only read, never written. The kernel
runs with CACHEQUEUE_SCHEMA_SUFFIX=_progress, so it never resets the schemas of a chapter
that is open in JupyterLab (`_mine`) or under test (`_test`). A cell that raises does not
stop the run (every exercise gets its verdict); a chapter that has not finished after
`--timeout` seconds is stopped there, and its exercises not reached are reported as such.

Per exercise (a cell tagged `solution` and the cells tagged `check` right after it):
  passed         every check cell ran without an error
  failed         the first error of the exercise's cells, with the check's message
  not attempted  the answer still raises NotImplementedError
  not reached    the chapter's time ran out before its check
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbtool  # noqa: E402
import study  # noqa: E402

SUFFIX = "_progress"
TIMEOUT = 900  # seconds per chapter; the longest chapter runs in about five minutes
PASSED, FAILED, NOT_ATTEMPTED, NOT_REACHED = "passed", "failed", "not attempted", "not reached"
LABEL = {PASSED: "通过", FAILED: "未通过", NOT_ATTEMPTED: "还没有作答", NOT_REACHED: "没有运行到"}


@dataclass
class Exercise:
    number: int
    title: str  # what the answer defines, e.g. "claim_one" (else its first line of code)
    status: str
    message: str = ""


@dataclass
class Chapter:
    name: str
    exercises: list[Exercise] = field(default_factory=list)
    other_errors: list[str] = field(default_factory=list)  # errors outside the exercises
    timed_out: bool = False
    seconds: float = 0.0


def _error(cell) -> tuple[str, str] | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out.get("ename", ""), out.get("evalue", "")
    return None


def _message(ename: str, evalue: str) -> str:
    text = f"{ename}: {evalue}" if evalue else ename
    return " ".join(text.split())[:400]


_DEF = re.compile(r"^(?:async\s+)?def\s+(\w+)", re.MULTILINE)


def _title(source: str) -> str:
    """The first function the answer cell defines, else its first line of code (shortened)."""
    if found := _DEF.search(source):
        return found[1]
    line = next((line.strip() for line in source.splitlines()
                 if line.strip() and not line.lstrip().startswith("#")), "")
    return line if len(line) <= 40 else line[:39] + "…"


def _still_a_stub(source: str) -> bool:
    return any(line.strip() == "raise NotImplementedError" for line in source.splitlines())


def _exercises(nb, ran: set[int]) -> list[Exercise]:
    """The verdict of each exercise of the executed `nb`; `ran` holds the indices (over all
    cells) of the cells that were executed before the chapter stopped."""
    cells = list(nb.cells)
    found = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "code" or "solution" not in nbtool.tags(cell):
            continue
        group = [cell]
        for nxt in cells[i + 1:]:
            if nxt.cell_type != "code":
                continue
            if "check" not in nbtool.tags(nxt):
                break
            group.append(nxt)
        last = cells.index(group[-1])
        title = _title(cell.source)
        errors = [e for e in map(_error, group) if e is not None]
        number = len(found) + 1
        if any(ename == "NotImplementedError" for ename, _ in errors) or (
                errors and _still_a_stub(cell.source)):
            found.append(Exercise(number, title, NOT_ATTEMPTED))
        elif errors:
            found.append(Exercise(number, title, FAILED, _message(*errors[0])))
        elif last not in ran:
            found.append(Exercise(number, title, NOT_REACHED))
        elif len(group) == 1:
            found.append(Exercise(number, title, FAILED, "答案单元格后面没有检查单元格（check 标签被去掉了？）"))
        else:
            found.append(Exercise(number, title, PASSED))
    return found


async def _run(nb, folder: Path, timeout: float) -> tuple[set[int], bool]:
    """Execute `nb` in place (in memory) within `timeout` seconds; (cells run, timed out)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    client = NotebookClient(
        nb, kernel_name=nbtool.KERNEL, timeout=int(timeout), allow_errors=True,
        shutdown_kernel="immediate", resources={"metadata": {"path": str(folder)}},
    )
    deadline = time.monotonic() + timeout
    ran: set[int] = set()
    env = {**os.environ, "CACHEQUEUE_SCHEMA_SUFFIX": SUFFIX}
    # The kernel's own stderr (ipykernel's start-up warnings) is not the learner's business:
    # what their cells print reaches the cells' outputs all the same.
    async with client.async_setup_kernel(env=env, stderr=subprocess.DEVNULL):
        for index, cell in enumerate(nb.cells):
            left = deadline - time.monotonic()
            if left <= 0:
                return ran, True
            client.timeout = max(1, int(left))
            try:
                await client.async_execute_cell(
                    cell, index, execution_count=client.code_cells_executed + 1)
            except CellTimeoutError:
                return ran, True
            ran.add(index)
    return ran, False


def check_chapter(path: Path, *, timeout: float = TIMEOUT) -> Chapter:
    """Run a temporary copy of the notebook at `path` and grade its exercises."""
    nb = nbformat.read(path, as_version=4)
    started = time.monotonic()
    ran, timed_out = asyncio.run(_run(nb, path.parent, timeout))
    chapter = Chapter(path.stem, _exercises(nb, ran), timed_out=timed_out,
                      seconds=round(time.monotonic() - started, 1))
    graded = {id(c) for i, c in enumerate(nb.cells) if nbtool.tags(c) & {"solution", "check"}}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and id(cell) not in graded and (err := _error(cell)):
            chapter.other_errors.append(f"第 {i + 1} 个单元格：{_message(*err)}")
    return chapter


def servers_problem() -> str | None:
    """One line saying why the database cannot be reached, or None if it can."""
    from cachequeue import db
    from cachequeue.errors import CacheQueueError

    try:
        db.connect(connect_timeout=5).close()
    except CacheQueueError as exc:
        return f"数据库连不上，没有运行任何一章：{exc}"
    return None


def chapter_paths(folder: Path, wanted: list[str]) -> list[Path]:
    paths = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if study.is_chapter_copy(p.name))
    if wanted:
        paths = [p for p in paths if any(p.name.startswith(f"{w.zfill(2)}_") for w in wanted)]
    return paths


def report_lines(chapters: list[Chapter]) -> list[str]:
    lines, totals = [], dict.fromkeys(LABEL, 0)
    for ch in chapters:
        head = f"{ch.name}（{ch.seconds:.0f} 秒）"
        if ch.timed_out:
            head += "：超过时限，在这里停下"
        if not ch.exercises:
            head += "：本章没有练习"
        lines.append(head)
        for ex in ch.exercises:
            totals[ex.status] += 1
            line = f"  练习 {ex.number}（{ex.title}）：{LABEL[ex.status]}"
            lines.append(f"{line}：{ex.message}" if ex.message else line)
        if ch.other_errors:
            lines.append(f"  另有 {len(ch.other_errors)} 个练习以外的单元格出错（常常是因为它们用到上面"
                         f"没有完成的练习），第一个是{ch.other_errors[0]}")
    lines.append("合计：" + "，".join(f"{LABEL[s]} {n}" for s, n in totals.items()))
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers, e.g. 03 6 (all if none)")
    parser.add_argument("--dir", type=Path, default=study.STUDY_DIR)
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per chapter")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--no-server-check", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if any(not w.isdigit() or len(w) > 2 for w in args.chapters):
        parser.error(f"chapters are numbers such as 03, got {args.chapters}")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    paths = chapter_paths(args.dir.resolve(), args.chapters)
    if not paths:
        print(f"{args.dir} 里没有要检查的章节副本：先运行 make lab 生成学习副本")
        return 2
    if not args.no_server_check and (problem := servers_problem()):
        print(problem)
        return 2
    chapters = []
    for path in paths:
        chapter = check_chapter(path, timeout=args.timeout)
        chapters.append(chapter)
        if not args.json:
            lines = report_lines([chapter])
            print("\n".join(lines[:-1]), flush=True)
    if args.json:
        print(json.dumps([asdict(c) for c in chapters], ensure_ascii=False, indent=1))
    else:
        print(report_lines(chapters)[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
