"""tools/nbtool.py refuses exercises it cannot strip safely."""

import importlib.util
from pathlib import Path

import nbformat
import pytest

_spec = importlib.util.spec_from_file_location(
    "nbtool", Path(__file__).resolve().parents[1] / "tools" / "nbtool.py")
nbtool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtool)


def _nb(source, tags):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = tags
    cell.outputs = [nbformat.v4.new_output("stream", text="answer\n")]
    cell.execution_count = 1
    nb.cells = [cell]
    return nb


def test_student_copy_strips_the_block_and_every_output():
    nb = _nb("def f():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION", ["solution"])
    copy = nbtool.student_copy(nb)
    assert copy.cells[0].source == "def f():\n    raise NotImplementedError"
    assert copy.cells[0].outputs == [] and copy.cells[0].execution_count is None
    assert "return 42" in nb.cells[0].source  # the instructor notebook is untouched


@pytest.mark.parametrize(("source", "tags"), [
    ("x = 1", ["solution"]),
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", []),
])
def test_mismatched_markers_and_tags_are_errors(source, tags):
    with pytest.raises(ValueError, match="solution"):
        nbtool.student_copy(_nb(source, tags))


def test_tidy_joins_split_stream_chunks_but_keeps_stdout_and_stderr_apart():
    nb = _nb("print('x')", [])
    out = nbformat.v4.new_output
    nb.cells[0].outputs = [out("stream", name="stdout", text="ab"), out("stream", name="stdout", text="c\n"),
                           out("stream", name="stderr", text="warn\n"), out("stream", name="stdout", text="d\n")]
    nbtool._tidy(nb)
    assert [(o.name, o.text) for o in nb.cells[0].outputs] == [
        ("stdout", "abc\n"), ("stderr", "warn\n"), ("stdout", "d\n")]


def _chapter_with_instructor_cells():
    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# 99 合成章节\n\n预计时间：5 分钟。")
    note = nbformat.v4.new_markdown_cell("讲师提示：在这里停下来，先请学员猜结果（INSTRUCTOR-ONLY-7f3a）。")
    note.metadata["tags"] = ["instructor"]
    demo = nbformat.v4.new_code_cell("print('INSTRUCTOR-ONLY-code')")
    demo.metadata["tags"] = ["instructor", "solution"]
    answer = nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION")
    answer.metadata["tags"] = ["solution"]
    check = nbformat.v4.new_code_cell("assert f() == 1")
    check.metadata["tags"] = ["check"]
    nb.cells = [title, note, demo, answer, check]
    return nb


def test_public_and_student_copies_drop_instructor_cells_and_keep_the_rest():
    nb = _chapter_with_instructor_cells()
    for copy in (nbtool.public_copy(nb), nbtool.student_copy(nb)):
        assert "INSTRUCTOR-ONLY" not in nbformat.writes(copy)
        assert [c.source.splitlines()[0] for c in copy.cells] == [
            "# 99 合成章节", "def f():", "assert f() == 1"]
    assert nbtool.public_copy(nb).cells[1].source == nb.cells[3].source  # answers kept
    assert len(nb.cells) == 5  # the repository's notebook keeps everything


def test_the_student_command_writes_copies_without_instructor_cells(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    nbformat.write(_chapter_with_instructor_cells(), notebooks / "99_synthetic.ipynb")
    monkeypatch.setattr(nbtool, "NOTEBOOKS", notebooks)
    assert nbtool.main(["student", "--out", str(tmp_path / "student")]) == 0
    written = (tmp_path / "student" / "99_synthetic.ipynb").read_text(encoding="utf-8")
    assert "INSTRUCTOR-ONLY" not in written and "NotImplementedError" in written
