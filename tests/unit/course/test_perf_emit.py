"""perf.emit: the bench scripts' one JSON document, on stdout and (with --out) in a file."""

import json

from cachequeue.course.labs import perf


def test_a_run_goes_to_stdout_and_to_the_file_it_is_recorded_in(tmp_path, capsys):
    perf.emit({"benchmark": "x", "rate": 1.5}, tmp_path / "x.json")
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "x.json").read_text()) == {"benchmark": "x", "rate": 1.5}


def test_without_a_file_it_only_prints(tmp_path, capsys):
    perf.emit({"n": 1})
    assert json.loads(capsys.readouterr().out) == {"n": 1} and list(tmp_path.iterdir()) == []
