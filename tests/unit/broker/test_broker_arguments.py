"""The broker part's hostile-caller checks, and the worker command's start-up failures,
without a server: bad names, deliveries and options are refused with the argument named;
a broker that cannot be reached is one line on stderr and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cachequeue import embedded_nats
from cachequeue.broker import BrokerWorker, Delivery, names
from cachequeue.cli import main
from cachequeue.queue.retry import RetryPolicy

HANDLERS = "cachequeue.course.app.summaries:SUMMARY_HANDLERS"


def test_names_follow_the_schema_and_kinds_are_subject_tokens():
    where = names("ch13")
    assert (where.stream, where.subject("summary"), where.consumer) == \
        ("CQ_ch13", "cq.ch13.jobs.summary", "workers")
    assert where.kind_of("cq.ch13.jobs.summary") == "summary"
    assert where.advisory == "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.CQ_ch13.workers"
    for bad in ("", "a.b", "a b", "*", ">", "x" * 101, 7):
        with pytest.raises(ValueError, match="kind must be"):
            where.subject(bad)
    with pytest.raises(ValueError):
        names("Not A Schema")


def test_a_delivery_checks_its_fields():
    Delivery("CQ_s", 1, 1, "k", "w")
    for field, value, error in (("seq", 0, ValueError), ("delivery", 0, ValueError),
                                ("seq", "1", TypeError), ("kind", "", ValueError),
                                ("worker", None, TypeError)):
        fields = {"stream": "CQ_s", "seq": 1, "delivery": 1, "kind": "k", "worker": "w",
                  field: value}
        with pytest.raises(error, match=field):
            Delivery(**fields)


def test_the_worker_refuses_bad_options_before_connecting():
    ok = {"echo": lambda p: p}
    for kwargs, error, match in (
            ({"handlers": {}}, TypeError, "non-empty mapping"),
            ({"handlers": {"a.b": print}}, ValueError, "kind must be"),
            ({"handlers": {"echo": 3}}, TypeError, "handlers"),
            ({"concurrency": 0}, ValueError, "concurrency"),
            ({"lease": 0}, ValueError, "lease"),
            ({"lease": 10, "heartbeat": 6}, ValueError, "heartbeat must be < lease/2"),
            ({"retry": 3}, TypeError, "retry"),
            ({"replicas": 6}, ValueError, "replicas")):
        with pytest.raises(error, match=match):
            BrokerWorker("s", **{"handlers": ok, **kwargs})
    worker = BrokerWorker("s", ok, lease=9, retry=RetryPolicy(max_attempts=5))
    assert worker.heartbeat == 3 and worker.retry.max_attempts == 5


def test_postgres_only_options_are_refused_with_broker_nats(capsys):
    for extra in (["--fair"], ["--no-listen"], ["--kinds", "a"], ["--tenant-cap", "2"]):
        assert main(["worker", "--broker", "nats", "--schema", "s", "--handlers", HANDLERS,
                     *extra]) == 2
        assert "an option of the PostgreSQL queue" in capsys.readouterr().err
    assert main(["worker", "--schema", "s", "--handlers", HANDLERS, "--max-attempts", "5"]) == 2
    assert "options of --broker nats" in capsys.readouterr().err


def _worker(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cachequeue", "worker", "--broker", "nats",
                           "--schema", "s", "--handlers", HANDLERS],
                          capture_output=True, text=True, timeout=60, env=env)


def test_an_unreachable_broker_at_start_up_is_one_line_and_exit_2(tmp_path):
    port = embedded_nats.free_ports(1)[0]
    env = {**os.environ, "NATS_URL": f"nats://127.0.0.1:{port}"}
    done = _worker(env)
    assert done.returncode == 2, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "NATS_URL" in lines[0] and "`make db`" in lines[0], lines
    assert f"nats://127.0.0.1:{port}" in lines[0] and "embedded nats-server" in lines[0]
    # No NATS_URL and the embedded server stopped (a fresh home): the same, one line.
    env = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    done = _worker({**env, "CACHEQUEUE_HOME": str(tmp_path)})
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done
    assert "embedded NATS server is not running" in lines[0] and "NATS_URL" in lines[0]


def test_a_malformed_nats_url_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv("NATS_URL", "http://x:4222")
    assert main(["worker", "--broker", "nats", "--schema", "s", "--handlers", HANDLERS]) == 2
    assert "NATS_URL is malformed" in capsys.readouterr().err


@pytest.mark.parametrize("payload", ["text", [1, 2], None, 7, {"x": float("nan")}, {"x": "y" * 70_000}])
def test_a_payload_the_postgresql_queue_refuses_is_refused_before_anything_is_published(payload):
    """The same rule as queue.jobs.submit: a dict within the payload limits (InvalidJob is
    a ValueError). The publish itself is never reached (no stream, no server here)."""
    import asyncio

    from cachequeue.broker import publish

    with pytest.raises(ValueError, match="payload"):
        asyncio.run(publish.submit(object(), names("ch13"), "noop", payload))


def test_a_bad_submitted_at_header_only_blanks_the_wait_on_the_started_line():
    from cachequeue.broker import worker
    from cachequeue.broker.publish import SUBMITTED_AT

    for headers in (None, {}, {SUBMITTED_AT: "soon"}, {SUBMITTED_AT: "1e999999"}, {SUBMITTED_AT: "nan"}):
        assert worker._waited(headers) == ""
    assert 0 <= worker._waited({SUBMITTED_AT: repr(__import__("time").time())}) < 5
