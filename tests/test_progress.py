"""`make progress` (tools/progress.py) on small synthetic chapters: it grades each exercise as
passed, failed with the check's message, or not attempted, stops a chapter at its time
limit, says in one line when the database is down, and never writes the learner's files."""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
_spec = importlib.util.spec_from_file_location("progress", ROOT / "tools" / "progress.py")
progress = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("progress", progress)
_spec.loader.exec_module(progress)

CHECK = ('import os\n'
         'assert os.environ["CACHEQUEUE_SCHEMA_SUFFIX"] == "_progress", "not on its own schemas"\n'
         'assert f() == 42, "f 应返回 42：见第 2 节"\nprint("检查通过")')


def _cell(source, *tags):
    cell = nbformat.v4.new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def _chapter(folder, name, answer, *, before=()):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "cachequeue", "display_name": "Python (cachequeue)",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {name}"), *before,
                _cell(f"def f():\n    {answer}", "solution"), _cell(CHECK, "check"),
                _cell("print('after the exercise')")]
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_solved_stub_and_wrong_exercises_are_told_apart_and_no_file_is_written(tmp_path, capsys):
    _chapter(tmp_path, "01_solved", "return 42")
    _chapter(tmp_path, "02_stub", "raise NotImplementedError")
    _chapter(tmp_path, "03_wrong", "return 41", before=[_cell("1 / 0")])
    _chapter(tmp_path, "03_wrong.new", "return 42")  # a new version beside: not graded
    before, suffix = _digest(tmp_path), os.environ.get("CACHEQUEUE_SCHEMA_SUFFIX")

    assert progress.main(["--dir", str(tmp_path), "--no-server-check", "--json"]) == 0
    chapters = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in chapters] == ["01_solved", "02_stub", "03_wrong"]
    verdicts = [(c["exercises"][0]["status"], c["exercises"][0]["message"]) for c in chapters]
    assert verdicts == [("passed", ""), ("not attempted", ""),
                        ("failed", "AssertionError: f 应返回 42：见第 2 节")]
    assert chapters[2]["other_errors"] == ["第 2 个单元格：ZeroDivisionError: division by zero"]
    assert not any(c["timed_out"] for c in chapters)
    assert _digest(tmp_path) == before  # the learner's files, byte for byte
    assert os.environ.get("CACHEQUEUE_SCHEMA_SUFFIX") == suffix  # only the kernels had _progress

    assert progress.main(["03", "--dir", str(tmp_path), "--no-server-check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("03_wrong（")
    assert lines[1:] == ["  练习 1（f）：未通过：AssertionError: f 应返回 42：见第 2 节",
                         "  另有 1 个练习以外的单元格出错（常常是因为它们用到上面没有完成的练习），"
                         "第一个是第 2 个单元格：ZeroDivisionError: division by zero",
                         "合计：通过 0，未通过 1，还没有作答 0，没有运行到 0"]


def test_a_chapter_that_runs_too_long_is_stopped_and_its_exercise_not_reached(tmp_path):
    path = _chapter(tmp_path, "04_slow", "return 42", before=[_cell("import time\ntime.sleep(120)")])
    chapter = progress.check_chapter(path, timeout=3)
    assert chapter.timed_out and chapter.seconds < 60
    assert [(e.status, e.title) for e in chapter.exercises] == [("not reached", "f")]
    assert progress.report_lines([chapter])[0].endswith("：超过时限，在这里停下")


def test_a_stopped_database_is_one_line_and_no_chapter_runs(tmp_path):
    _chapter(tmp_path, "01_solved", "return 42")
    env = {**os.environ, "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "progress.py"), "--dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("数据库连不上，没有运行任何一章：")
    assert "DATABASE_URL" in lines[0]


def test_an_exercise_is_named_by_the_function_it_defines():
    assert progress._title('FALLBACK = "x"\n\n\nasync def summary_or_fallback(cache):\n    ...') == (
        "summary_or_fallback")
    assert progress._title("# comment\nanswer = " + "1 + " * 20 + "1").endswith("…")


def test_an_empty_folder_says_to_run_make_lab(tmp_path, capsys):
    assert progress.main(["--dir", str(tmp_path), "--no-server-check"]) == 2
    assert "make lab" in capsys.readouterr().out
