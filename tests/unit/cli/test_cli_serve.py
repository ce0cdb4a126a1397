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
