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
