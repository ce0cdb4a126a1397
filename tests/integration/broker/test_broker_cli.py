"""`cachequeue worker --broker nats` as a real process: it runs the stream's jobs into the
schema's fenced results, and SIGTERM stops it cleanly (exit 0, nothing handed back)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from brokerhelpers import wait_for

from cachequeue import db
from cachequeue.broker import Publisher, fence, names
from cachequeue.queue import logline

pytestmark = pytest.mark.nats

TESTS = Path(__file__).resolve().parents[2]


def test_the_worker_command_runs_the_stream_and_stops_on_sigterm(schema, nats_url, tmp_path):
    with Publisher(schema, url=nats_url) as pub:
        for n in range(20):
            pub.submit("double", {"n": n}, msg_id=f"cli-{n}")
    with db.connect(schema) as conn:
        fence.install(conn)  # the worker installs them too; counted before it does
    log = tmp_path / "worker.log"
    env = {**os.environ, "NATS_URL": nats_url,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    with open(log, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "cachequeue", "worker", "--broker", "nats",
                                 "--schema", schema, "--handlers", "brokerhelpers:HANDLERS",
                                 "--concurrency", "2", "--name", "cli-w"],
                                stderr=stderr, env=env)
    try:
        def results():
            with db.connect(schema) as conn:
                return fence.counts(conn, names(schema).stream)["results"]

        wait_for(lambda: results() == 20, 60, "20 results from the worker process")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    events = [logline.parse(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events if e["event"] in ("starting", "ready", "stopped")] == \
        ["starting", "ready", "stopped"]
    assert sum(e["event"] == "finished" for e in events) == 20
    assert all(e["worker"] == "cli-w" for e in events)
    with db.connect(schema) as conn:
        rows = fence.results(conn, names(schema).stream)
    assert sorted(r["result"]["twice"] for r in rows) == [2 * n for n in range(20)]
