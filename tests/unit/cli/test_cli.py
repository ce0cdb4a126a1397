"""The `cachequeue` command line: bad arguments are one line on stderr and exit status 2,
before anything touches the database (db.connect is replaced by a tripwire here)."""

import subprocess
import sys

import pytest

from cachequeue import cli, db
from cachequeue.cli import base

GOOD = ["worker", "--schema", "ch06", "--handlers", "cachequeue.course.app.effects:EFFECT_HANDLERS"]


@pytest.fixture(autouse=True)
def no_database(monkeypatch):
    def tripwire(*args, **kwargs):
        raise AssertionError("the command touched the database")

    monkeypatch.setattr(db, "connect", tripwire)
    monkeypatch.setattr(db.embedded, "start", tripwire)
    monkeypatch.delenv("DATABASE_URL", raising=False)


@pytest.mark.parametrize("argv, message", [
    (["worker", "--schema", "ch06", "--handlers", "no.such.module:H"],
     "cannot import handler module 'no.such.module'"),
    (["worker", "--schema", "ch06", "--handlers", "cachequeue.course.app.effects:NOPE"],
     "has no attribute 'NOPE'"),
    (["worker", "--schema", "ch06", "--handlers", "json:dumps"], "must be a mapping"),
    (["worker", "--schema", "ch06", "--handlers", "cachequeue.course.app.effects"],
     "must look like MODULE:ATTR"),
    (GOOD + ["--kinds", "effect,summarise"], "no handler for the kinds ['summarise']"),
    (GOOD + ["--lease", "0"], "lease must be > 0"),
    (GOOD + ["--lease", "-3"], "lease must be > 0"),
    (GOOD + ["--lease", "soon"], "invalid float value: 'soon'"),
    (GOOD + ["--concurrency", "0"], "concurrency must be >= 1"),
    (GOOD + ["--heartbeat", "40"], "heartbeat (40 s) must be less than half the lease"),
    (GOOD + ["--heartbeat", "15"], "heartbeat (15 s) must be less than half the lease (30 s)"),
    (GOOD + ["--shutdown-timeout", "-1"], "shutdown_timeout must be >= 0"),
    (GOOD + ["--kinds", "a,,b"], "a comma-separated list of kinds"),
    (GOOD + ["--tenant-cap", "2"], "tenant_cap needs fair=True"),
    (GOOD + ["--fair", "--tenant-cap", "0"], "tenant_cap must be >= 1"),
    (["worker", "--schema", "Bad-Name", "--handlers", "cachequeue.course.app.effects:EFFECT_HANDLERS"],
     "schema name must be lower-case"),
    (["worker", "--schema", "ch06"], "the following arguments are required: --handlers"),
    (["nonsense"], "invalid choice: 'nonsense'"),
    ([], "the following arguments are required: COMMAND"),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, message):
    assert_usage_error(capsys, argv, message)


def assert_usage_error(capsys, argv, message):
    """`cachequeue ARGV` exits 2 with one line on stderr that says `message`."""
    assert cli.main(argv) == base.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cachequeue"), err
    assert message in err


@pytest.mark.parametrize("argv", [GOOD, ["serve", "--schema", "ch07", "--app",
                                         "cachequeue.course.app.webapp:create_app"]])
def test_a_malformed_database_url_is_a_usage_error_too(capsys, monkeypatch, argv):
    monkeypatch.setenv("DATABASE_URL", "mysql://localhost/x")
    assert_usage_error(capsys, argv, "DATABASE_URL must start with postgresql://")


def test_the_registry_builds_one_subcommand_per_command():
    assert [c.name for c in cli.COMMANDS] == ["worker", "serve", "scheduler", "verify",
                                             "verify-schedules"]
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["worker", "--help"])
    assert exit_.value.code == 0


def test_python_dash_m_runs_the_same_command_line():
    # A real process, and a real exit status: this module cannot be imported.
    done = subprocess.run([sys.executable, "-m", "cachequeue", "worker", "--schema", "ch06",
                           "--handlers", "no_such_module:HANDLERS"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "DATABASE_URL": "postgresql://x@127.0.0.1:1/x"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "cachequeue worker: cannot import handler module 'no_such_module': "
        "No module named 'no_such_module' (see --help)"]


@pytest.mark.parametrize("heartbeat", ["14.9", "10", "0"])
def test_a_heartbeat_under_half_the_lease_or_none_is_accepted(heartbeat):
    from cachequeue.cli import worker

    args = cli.build_parser().parse_args(GOOD + ["--lease", "30", "--heartbeat", heartbeat])
    assert callable(worker.prepare(args))  # checked, nothing run, the database untouched


def test_the_worker_runs_ten_jobs_at_once_unless_told_otherwise(capsys):
    from cachequeue.cli.worker import CONCURRENCY

    parser = cli.build_parser()
    assert CONCURRENCY == 10
    assert parser.parse_args(GOOD).concurrency == 10
    assert parser.parse_args(GOOD + ["--concurrency", "1"]).concurrency == 1
    with pytest.raises(SystemExit):
        parser.parse_args(["worker", "--help"])
    helptext = " ".join(capsys.readouterr().out.split())
    assert "(default 10, as pgqueuer claims 10 per statement;" in helptext


@pytest.fixture
def bad_modules(tmp_path, monkeypatch):
    """Importable modules that fail on import in three ways, and one with a non-str key."""
    (tmp_path / "cq_raises.py").write_text("raise RuntimeError('broken\\nhandlers')\n")
    (tmp_path / "cq_syntax.py").write_text("def broken(:\n")
    (tmp_path / "cq_exits.py").write_text("raise SystemExit(0)\n")
    (tmp_path / "cq_keys.py").write_text("H = {1: print}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in ("cq_raises", "cq_syntax", "cq_exits", "cq_keys"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("module, message", [
    ("cq_raises", "handler module 'cq_raises' failed on import: RuntimeError: broken handlers"),
    ("cq_syntax", "handler module 'cq_syntax' failed on import: SyntaxError"),
    ("cq_exits", "handler module 'cq_exits' failed on import: SystemExit: 0"),
    ("cq_keys", "must map kind names (str) to callables"),
])
def test_a_handlers_module_that_fails_on_import_is_a_usage_error(capsys, bad_modules, module,
                                                                 message):
    key = "H" if module == "cq_keys" else "X"
    assert_usage_error(capsys, ["worker", "--schema", "ch06", "--handlers", f"{module}:{key}"],
                       message)


def test_an_app_module_that_fails_on_import_is_a_usage_error(capsys, bad_modules):
    assert_usage_error(capsys, ["serve", "--schema", "ch07", "--app", "cq_exits:create_app"],
                       "app module 'cq_exits' failed on import: SystemExit: 0")


@pytest.mark.parametrize("argv, message", [
    (GOOD + ["--name", "a\nb"], "--name must be printable"),
    (GOOD + ["--name", "a\tb"], "--name must be printable"),
    (GOOD + ["--batch", "5", "--no-batch"], "--no-batch finishes every job alone"),
    (GOOD + ["--no-batch", "--batch-wait", "0.1"], "--no-batch finishes every job alone"),
    (GOOD + ["--broker", "nats", "--batch", "5"], "--batch is an option of the PostgreSQL queue"),
])
def test_conflicting_or_unprintable_worker_options_are_refused(capsys, argv, message):
    assert_usage_error(capsys, argv, message)


@pytest.mark.parametrize("argv, batch", [(GOOD + ["--no-batch"], 1),
                                         (GOOD + ["--batch", "7"], 7), (GOOD, 100)])
def test_no_batch_alone_and_batch_alone_are_accepted(monkeypatch, argv, batch):
    from cachequeue.cli import worker as worker_cli

    built = {}
    monkeypatch.setattr(worker_cli, "_run", lambda worker, *a: built.setdefault("w", worker))
    args = cli.build_parser().parse_args(argv)
    args.prepare(args)()
    assert built["w"]._batch == batch


@pytest.mark.parametrize("argv, message", [
    (["verify-schedules", "--schedulers", "1"], "--schedulers must be 2 to 8"),
    (["verify-schedules", "--steps", "10"], "--steps must be 30 to 500"),
    (["verify-schedules", "--variant", "nope"], "invalid choice"),
    (["scheduler", "--schema", "ch14", "--interval", "-1"], "--interval"),
])
def test_the_schedules_commands_refuse_bad_arguments_in_one_line(capsys, argv, message):
    assert_usage_error(capsys, argv, message)
