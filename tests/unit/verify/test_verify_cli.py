"""`cachequeue verify` refuses bad arguments with exit status 2, before anything starts."""

from __future__ import annotations

import pytest

from cachequeue import cli


@pytest.mark.parametrize("argv", [
    ["verify", "--jobs", "0"],
    ["verify", "--workers", "40"],
    ["verify", "--variant", "no-such-mutant"],
    ["verify", "--faults", "kill,flood"],
    ["verify", "--time-limit", "-1"],
    ["verify", "--seed", "x"],
    ["verify", "--tenants", "0"],
    ["verify", "--tenant-cap", "0"],
    ["verify", "--variant", "custom"],
    ["verify", "--prefetch", "-1"],
    ["verify", "--prefetch", "201"],
    ["verify", "--prefetch", "20", "--tenant-cap", "1"],
])
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cachequeue verify") and "\n" not in err


def test_the_command_is_registered_with_every_variant(capsys):
    with pytest.raises(SystemExit):
        cli.main(["verify", "--help"])
    text = capsys.readouterr().out
    for name in ("no-token-check", "read-then-claim", "reset-on-shutdown", "unfenced-batch",
                 "heartbeat-after-expiry"):
        assert name in text


def test_a_custom_variant_needs_its_statements_in_the_kept_folder(tmp_path, capsys):
    assert cli.main(["verify", "--variant", "custom", "--keep", str(tmp_path)]) == 2
    assert "custom.sql" in capsys.readouterr().err
    (tmp_path / "custom.sql").write_text("-- name: claim\nSELECT 1;\n", encoding="utf-8")
    assert cli.main(["verify", "--variant", "custom", "--keep", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cachequeue verify") and "\n" not in err.strip(), err


def test_keep_that_names_a_file_is_a_usage_error(tmp_path, capsys):
    kept = tmp_path / "history.jsonl"
    kept.write_text("mine\n", encoding="utf-8")
    assert cli.main(["verify", "--keep", str(kept)]) == 2  # a traceback before (issue 32)
    err = capsys.readouterr().err.strip()
    assert err.startswith("cachequeue verify") and "not a directory" in err and "\n" not in err
    assert kept.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize(("violations", "inconclusive", "status"), [
    ([], [], 0), ([{"check": "lost"}], [], 1), ([{"check": "lost"}], [{"job": 1}], 1),
    ([], [{"job": 1, "state": "pending", "cause": "the time limit of 1 s passed"}], 3),
])
def test_the_exit_status_says_pass_violations_or_inconclusive(violations, inconclusive, status,
                                                               monkeypatch, capsys):
    from cachequeue.verify import driver

    def fake_run(**kw):
        return {"violations": violations, "inconclusive": inconclusive}
    monkeypatch.setattr(driver, "run", fake_run)
    assert cli.main(["verify", "--faults", "none"]) == status
    assert '"inconclusive"' in capsys.readouterr().out
