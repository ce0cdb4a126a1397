"""`cachequeue serve`: bad arguments are one line on stderr and exit status 2, before the
database is touched and before uvicorn or FastAPI are even imported."""

import subprocess
import sys

import pytest
from test_cli import assert_usage_error, no_database  # noqa: F401 (no_database is autouse: a tripwire here too)

APP = ["--app", "cachequeue.course.app.webapp:create_app"]
GOOD = ["serve", "--schema", "ch07", *APP]
HANDLERS = ["--handlers", "cachequeue.course.app.summaries:SUMMARY_HANDLERS"]


@pytest.mark.parametrize("argv, message", [
    (["serve", "--schema", "ch07", "--app", "no.such.module:create_app"],
     "cannot import app module 'no.such.module'"),
    (["serve", "--schema", "ch07", "--app", "cachequeue.course.app.webapp:NOPE"],
     "module 'cachequeue.course.app.webapp' has no attribute 'NOPE'"),
    (["serve", "--schema", "ch07", "--app", "cachequeue.course.app.webapp:PAGE_DIR"],
     "must be a callable factory(schema)"),
    (["serve", "--schema", "ch07", "--app", "cachequeue.course.app.webapp"],
     "--app must look like MODULE:ATTR"),
    (GOOD + ["--port", "70000"], "--port must be 0..65535"),
    (GOOD + ["--port", "http"], "invalid int value: 'http'"),
    (GOOD + ["--workers", "2"], "--workers needs --handlers"),
    (GOOD + HANDLERS, "--handlers is for the workers"),
    (GOOD + ["--workers", "1", "--handlers", "no_such_module:H"],
     "cannot import handler module 'no_such_module'"),
    (GOOD + ["--workers", "-1"] + HANDLERS, "--workers must be 0..32"),
    (GOOD + ["--workers", "1", "--concurrency", "0"] + HANDLERS, "--concurrency must be >= 1"),
    (GOOD + ["--shutdown-timeout", "-1"], "--shutdown-timeout must be 0..3600"),
    (GOOD + ["--lock-timeout", "0"], "--lock-timeout must be > 0 and <= 300"),
    (GOOD + ["--statement-timeout", "nan"], "--statement-timeout must be > 0 and <= 300"),
    (["serve", "--schema", "Bad-Name", *APP], "schema name must be lower-case"),
    (["serve", "--schema", "ch07"], "the following arguments are required: --app"),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, message):
    assert_usage_error(capsys, argv, message)


def test_the_worker_command_does_not_import_the_web_stack():
    probe = ("import sys; from cachequeue import cli; "
             "print(sorted(m for m in ('fastapi', 'uvicorn', 'cachequeue.service') "
             "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.parametrize("argv, message", [
    (GOOD + ["--workers", "1", "--concurrency", "1000000000"] + HANDLERS,
     "the workers would refuse: concurrency must be <= "),
    (GOOD + ["--workers", "1", "--tenant-cap", "0"] + HANDLERS,
     "the workers would refuse: tenant_cap must be >= 1"),
    (GOOD + ["--workers", "1", "--no-fair", "--tenant-cap", "2"] + HANDLERS,
     "--tenant-cap needs --fair"),
])
def test_worker_settings_a_worker_would_refuse_are_refused_by_serve(capsys, argv, message):
    assert_usage_error(capsys, argv, message)


def prepared(argv):
    from cachequeue import cli

    args = cli.build_parser().parse_args(argv)
    args.prepare(args)
    return args


def test_serve_passes_fair_claiming_and_a_tenant_cap_to_its_workers():
    from cachequeue.cli.serving import _fairness

    default = prepared(GOOD + ["--workers", "2", "--concurrency", "2"] + HANDLERS)
    assert (default.fair, default.tenant_cap) == (True, 2)
    assert _fairness(default) == ["--fair", "--tenant-cap", "2"]
    one = prepared(GOOD + ["--workers", "1", "--concurrency", "1"] + HANDLERS)
    assert _fairness(one) == ["--fair", "--tenant-cap", "1"]
    given = prepared(GOOD + ["--workers", "1", "--tenant-cap", "7"] + HANDLERS)
    assert _fairness(given) == ["--fair", "--tenant-cap", "7"]
    fifo = prepared(GOOD + ["--workers", "1", "--no-fair"] + HANDLERS)
    assert _fairness(fifo) == []


def test_a_worker_that_exits_with_a_usage_error_is_not_restarted_and_stops_serve():
    import threading

    from cachequeue.cli.serving import Supervisor

    class Refusing(Supervisor):
        spawned = 0

        def _spawn(self, i):
            Refusing.spawned += 1
            return subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"])

    fatal = threading.Event()
    args = prepared(GOOD + ["--workers", "2"] + HANDLERS)
    workers = Refusing(args)
    workers.on_fatal = fatal.set
    workers.start()
    assert fatal.wait(30), "on_fatal was not called"
    for thread in workers._threads:
        thread.join(30)  # both watchers returned: nothing is waiting to restart
    assert not any(thread.is_alive() for thread in workers._threads)
    assert workers.refused and workers.restarts == 0 and Refusing.spawned == 2
    assert workers.wait() == [2, 2]


def test_serve_sets_the_services_statement_and_lock_timeouts():
    from cachequeue import service
    from cachequeue.cli.serving import _build

    args = prepared(GOOD + ["--lock-timeout", "30", "--statement-timeout", "45"])
    app = _build(args, lambda schema: service.create_app(schema, service.TokenTable({})))
    built = app.state.service
    assert (built.lock_timeout, built.statement_timeout) == (30.0, 45.0)
    default = _build(prepared(GOOD), lambda schema: service.create_app(schema, service.TokenTable({})))
    assert (default.state.service.lock_timeout, default.state.service.statement_timeout) == (5.0, 10.0)


def test_serve_sets_the_per_tenant_limits():
    from cachequeue import service
    from cachequeue.cli.serving import _build

    def factory(schema):
        return service.create_app(schema, service.TokenTable({}))

    args = prepared(GOOD + ["--submit-rate", "5", "--submit-burst", "10", "--max-pending", "0",
                            "--max-streams", "3"])
    built = _build(args, factory).state.service
    assert (built.limits.submit_rate, built.limits.submit_burst, built.max_pending,
            built.limits.max_streams) == (5.0, 10.0, 0, 3)
    default = _build(prepared(GOOD), factory).state.service
    assert (default.limits.submit_rate, default.limits.submit_burst, default.max_pending,
            default.limits.max_streams) == (100.0, 200.0, 2000, 100)


@pytest.mark.parametrize("argv, message", [
    (GOOD + ["--submit-rate", "-1"], "--submit-rate must be 0..1e+06"),
    (GOOD + ["--submit-burst", "0"], "--submit-burst must be 1..1e+06"),
    (GOOD + ["--max-pending", "-5"], "--max-pending must be 0..1e+09"),
    (GOOD + ["--max-streams", "nan"], "invalid int value"),
])
def test_bad_limits_are_usage_errors(capsys, argv, message):
    assert_usage_error(capsys, argv, message)


def test_the_access_log_never_shows_a_query_string():
    import logging

    from cachequeue.cli.serving import RedactQuery, access_log_config

    record = logging.LogRecord("uvicorn.access", logging.INFO, "", 0,
                               '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", "/v1/jobs/1?access_token=cq11-secret",
                                "1.1", 401), None)
    assert RedactQuery().filter(record)
    assert record.getMessage() == '127.0.0.1:5 - "GET /v1/jobs/1?[redacted] HTTP/1.1" 401'
    config = access_log_config()
    assert config["handlers"]["access"]["filters"] == ["redact_query"]
    assert config["handlers"]["access"]["stream"] == "ext://sys.stderr"


def test_limit_concurrency_is_checked():
    from cachequeue import cli

    assert prepared(GOOD).limit_concurrency == 1000
    with pytest.raises(cli.UsageError, match="--limit-concurrency must be 1..100000"):
        prepared(GOOD + ["--limit-concurrency", "0"])
