"""The learner's own copies (`make lab`, tools/study.py): made from the chapters, never
overwriting or deleting what the learner changed; the course's JupyterLab settings."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("study", ROOT / "tools" / "study.py")
study = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("study", study)  # its dataclasses look their module up there
_spec.loader.exec_module(study)


def _chapter(title="# 98 合成章节", answer="return 42"):
    nb = nbformat.v4.new_notebook()
    teach = nbformat.v4.new_code_cell("print('teaching')")
    teach.outputs = [nbformat.v4.new_output("stream", text="teaching output\n")]
    teach.execution_count = 1
    solution = nbformat.v4.new_code_cell(
        f"def f():\n    ### BEGIN SOLUTION\n    {answer}\n    ### END SOLUTION")
    solution.metadata["tags"] = ["solution"]
    solution.outputs = [nbformat.v4.new_output("stream", text="answer output\n")]
    solution.execution_count = 2
    check = nbformat.v4.new_code_cell("assert f() == 42\nprint('检查通过')")
    check.metadata["tags"] = ["check"]
    check.outputs = [nbformat.v4.new_output("stream", text="检查通过\n")]
    check.execution_count = 3
    note = nbformat.v4.new_markdown_cell("讲师提示 INSTRUCTOR-ONLY")
    note.metadata["tags"] = ["instructor"]
    nb.cells = [nbformat.v4.new_markdown_cell(title), teach, note, solution, check]
    return nb


def test_a_learner_copy_has_no_answer_no_check_output_and_keeps_the_teaching_output():
    copy = nbformat.reads(study.learner_copy(_chapter()).decode(), as_version=4)
    teach, solution, check = copy.cells[1:]
    assert [o["text"] for o in teach.outputs] == ["teaching output\n"] and teach.execution_count == 1
    assert solution.source == "def f():\n    raise NotImplementedError"
    assert solution.outputs == [] and check.outputs == [] and check.execution_count is None
    assert "INSTRUCTOR-ONLY" not in nbformat.writes(copy) and "return 42" not in nbformat.writes(copy)
    nb = _chapter()
    assert study.learner_copy(nb) == study.learner_copy(nb)  # same notebook, same bytes


def _write(folder, name, nb):
    folder.mkdir(exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder / name


def test_from_a_copy_of_the_tree_the_command_makes_every_copy_and_a_second_run_keeps_an_edit(
        tmp_path):
    tree = tmp_path / "course"
    shutil.copytree(ROOT / "notebooks", tree / "notebooks")
    (tree / "tools").mkdir()
    for name in ("study.py", "nbtool.py"):
        shutil.copy(ROOT / "tools" / name, tree / "tools" / name)

    def run():
        done = subprocess.run([sys.executable, "tools/study.py", "copies"], cwd=tree,
                              capture_output=True, text=True, timeout=120, check=True)
        return done.stdout.strip().splitlines()

    chapters = sorted(p.name for p in (tree / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    first = run()
    mine = tree / "my-notebooks"
    assert first == [f"学习副本在 my-notebooks/（答案已去掉，你的修改只保存在这里）：新建 {len(chapters)}"]
    assert sorted(p.name for p in mine.glob("*.ipynb")) == chapters
    for name in chapters:
        nb = nbformat.read(mine / name, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert "### BEGIN SOLUTION" not in cell.source, name
                if {"solution", "check"} & set(cell.metadata.get("tags", [])):
                    assert cell.outputs == [], name

    edited = mine / "03_persist_claim_lease.ipynb"
    nb = nbformat.read(edited, as_version=4)
    answer = next(c for c in nb.cells if "solution" in c.metadata.get("tags", []))
    answer.source = answer.source.replace("raise NotImplementedError", "return None  # 我的答案")
    nbformat.write(nb, edited)
    theirs = edited.read_bytes()
    (mine / "04_retry_backoff.ipynb").unlink()

    second = run()
    assert second == [f"学习副本在 my-notebooks/（答案已去掉，你的修改只保存在这里）：恢复 1，保留你改过的 1，"
                      f"不变 {len(chapters) - 2}"]
    assert edited.read_bytes() == theirs  # byte for byte
    assert (mine / "04_retry_backoff.ipynb").read_bytes() == study.learner_copy(
        nbformat.read(tree / "notebooks" / "04_retry_backoff.ipynb", as_version=4))
    assert not list(mine.glob("*.new*.ipynb"))  # the chapter did not change: nothing beside

    # The instructor version of 03 changes: the learner's copy stays, the new one lands beside.
    upstream = tree / "notebooks" / "03_persist_claim_lease.ipynb"
    nb = nbformat.read(upstream, as_version=4)
    nb.cells[0].source += "\n\n（修订）"
    nbformat.write(nb, upstream)
    third = run()
    assert third == [f"学习副本在 my-notebooks/（答案已去掉，你的修改只保存在这里）：保留你改过的 1，不变 {len(chapters) - 1}",
                     "03_persist_claim_lease.ipynb 有新版本：你的副本不变，"
                     "新版本在 my-notebooks/03_persist_claim_lease.new.ipynb"]
    assert edited.read_bytes() == theirs
    assert "（修订）" in (mine / "03_persist_claim_lease.new.ipynb").read_text(encoding="utf-8")
    assert run()[1:] == []  # told once per version


def test_changed_new_deleted_and_removed_chapters(tmp_path):
    src, mine = tmp_path / "notebooks", tmp_path / "mine"
    a = _write(src, "01_a.ipynb", _chapter("# 01 A"))
    b = _write(src, "02_b.ipynb", _chapter("# 02 B"))
    c = _write(src, "03_c.ipynb", _chapter("# 03 C"))
    report = study.sync([a, b, c], mine)
    assert report.created == ["01_a.ipynb", "02_b.ipynb", "03_c.ipynb"]

    # The learner edits 01 and 03; then 01, 02 and 03 change upstream, 04 is new, 03 is gone.
    (mine / "01_a.ipynb").write_bytes((mine / "01_a.ipynb").read_bytes().replace(b"raise", b"  raise"))
    (mine / "03_c.ipynb").write_text("{}", encoding="utf-8")
    theirs_a, theirs_c = (mine / "01_a.ipynb").read_bytes(), (mine / "03_c.ipynb").read_bytes()
    a = _write(src, "01_a.ipynb", _chapter("# 01 A，第二版"))
    b = _write(src, "02_b.ipynb", _chapter("# 02 B，第二版"))
    d = _write(src, "04_d.ipynb", _chapter("# 04 D"))
    report = study.sync([a, b, d], mine)
    assert (report.created, report.refreshed, report.kept) == (["04_d.ipynb"], ["02_b.ipynb"], ["01_a.ipynb"])
    assert report.beside == [("01_a.ipynb", "01_a.new.ipynb")] and report.removed == []
    assert report.orphaned == ["03_c.ipynb"]
    assert (mine / "01_a.ipynb").read_bytes() == theirs_a
    assert (mine / "01_a.new.ipynb").read_bytes() == study.learner_copy(nbformat.read(a, as_version=4))
    assert (mine / "03_c.ipynb").read_bytes() == theirs_c  # changed by the learner: kept
    assert b"\xe7\xac\xac\xe4\xba\x8c\xe7\x89\x88" in (mine / "02_b.ipynb").read_bytes()  # "第二版"
    lines = report.lines()
    assert lines[1:] == ["01_a.ipynb 有新版本：你的副本不变，新版本在 " + f"{mine}/01_a.new.ipynb",
                         "03_c.ipynb 已不是课程中的章节（可能换了编号或名称）：你改过它，所以它保持不变"]

    # Same versions again: nothing written, no second copy beside.
    again = study.sync([a, b, d], mine)
    assert again.beside == [] and again.kept == ["01_a.ipynb"] and len(again.lines()) == 1
    # The learner works in the new version beside; a third version must not overwrite it.
    (mine / "01_a.new.ipynb").write_bytes(b"{} ")
    a = _write(src, "01_a.ipynb", _chapter("# 01 A，第三版"))
    third = study.sync([a, b, d], mine)
    assert third.beside == [("01_a.ipynb", "01_a.new-2.ipynb")]
    assert (mine / "01_a.new.ipynb").read_bytes() == b"{} "

    # 04 is withdrawn upstream: its untouched copy goes; the learner's own files stay.
    gone = study.sync([a, b], mine)
    assert gone.removed == ["04_d.ipynb"] and not (mine / "04_d.ipynb").exists()
    assert (mine / "03_c.ipynb").read_bytes() == theirs_c and (mine / "01_a.ipynb").read_bytes() == theirs_a


def test_a_damaged_manifest_keeps_every_file_that_differs(tmp_path):
    src, mine = tmp_path / "notebooks", tmp_path / "mine"
    a = _write(src, "01_a.ipynb", _chapter())
    study.sync([a], mine)
    (mine / "01_a.ipynb").write_bytes(b"mine")
    (mine / study.MANIFEST).write_text("{not json", encoding="utf-8")
    a = _write(src, "01_a.ipynb", _chapter("# 01 新版"))
    report = study.sync([a], mine)
    assert report.manifest_damaged and report.kept == ["01_a.ipynb"]
    assert (mine / "01_a.ipynb").read_bytes() == b"mine" and (mine / "01_a.new.ipynb").exists()
    assert "无法读取" in report.lines()[0]
    assert json.loads((mine / study.MANIFEST).read_text())["version"] == study.MANIFEST_VERSION


def test_a_chapter_copy_and_a_new_version_beside_it_are_told_apart():
    assert study.is_chapter_copy("03_persist_claim_lease.ipynb")
    assert not study.is_chapter_copy("03_persist_claim_lease.new.ipynb")
    assert not study.is_chapter_copy("03_persist_claim_lease.new-2.ipynb")


def _make_n(target):
    done = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_opens_the_learners_copies_on_their_own_schemas_and_lab_instructor_the_notebooks():
    lab = _make_n("lab")
    assert "tools/study.py copies --dir my-notebooks" in lab
    assert "CACHEQUEUE_SCHEMA_SUFFIX=_mine .venv/bin/jupyter lab --notebook-dir=my-notebooks" in lab
    instructor = _make_n("lab-instructor")
    assert "jupyter lab --notebook-dir=notebooks" in instructor and "SCHEMA_SUFFIX" not in instructor
    assert "/my-notebooks/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_news_prompt_is_off_in_the_courses_jupyterlab(tmp_path):
    schema = json.loads((Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas" / "@jupyterlab"
                         / "apputils-extension" / "notification.json").read_text(encoding="utf-8"))
    allowed = {choice["const"] for choice in schema["properties"]["fetchNews"]["oneOf"]}
    assert "false" in allowed  # "Never" in the installed JupyterLab's own schema
    installed = json.loads((Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"
                            / "overrides.json").read_text(encoding="utf-8"))
    assert installed["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    # Someone's own overrides in the same file are kept.
    own = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}))
    study.write_lab_settings(tmp_path)
    written = json.loads(own.read_text())
    assert written["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert written["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
