"""`cachequeue scheduler` as a real process against a private server that is restarted:
the pass after the restart fails with one log line, the next connects again and fires."""

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from cachequeue import db, embedded, queue
from cachequeue.queue import schedules

SCHEMA = "schedcli"


def _create_due(url, name):
    """A minutely schedule created "two minutes ago": its latest minute is owed at once."""
    with db.connect(SCHEMA, url=url) as conn:
        real_now = conn.execute("SELECT clock_timestamp()").fetchone()[0]
        db.set_clock(conn, (real_now - timedelta(minutes=2)).isoformat())
        schedules.create(conn, name, "* * * * *", kind="report", payload={})


def _wait_fired(url, name, wait=60.0):
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with db.connect(SCHEMA, url=url) as conn:
                if schedules.fires(conn, name):
                    return True
        except Exception:  # the server is restarting
            pass
        time.sleep(0.2)
    return False


def test_the_scheduler_reconnects_after_the_server_restarted(monkeypatch):
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)
    with embedded.Server.private() as server:
        url = server.url
        with db.connect(url=url) as conn:
            db.reset_schema(conn, SCHEMA, queue.install, schedules.install)
            conn.execute("INSERT INTO job_kinds (kind, description) VALUES ('report', 'r')")
        _create_due(url, "before")
        env = os.environ | {"DATABASE_URL": url}
        script = Path(sys.executable).parent / "cachequeue"
        proc = subprocess.Popen([str(script), "scheduler", "--schema", SCHEMA, "--interval",
                                 "0.2", "--name", "cli"], stderr=subprocess.PIPE, text=True,
                                env=env)
        try:
            assert _wait_fired(url, "before")
            server.restart()
            _create_due(url, "after")
            assert _wait_fired(url, "after"), "the scheduler connected again and fired"
            proc.terminate()
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        log = proc.stderr.read()
        assert " cli disconnected " in log and log.count(" cli fired ") >= 2
        with db.connect(SCHEMA, url=url) as conn:
            fired = schedules.fires(conn)
        assert len({(f["name"], f["fire_at"]) for f in fired}) == len(fired)


def test_verify_schedules_runs_the_fault_run_and_exits_0_when_nothing_is_wrong():
    script = Path(sys.executable).parent / "cachequeue"
    done = subprocess.run([str(script), "verify-schedules", "--steps", "30", "--seed", "3"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    shown = json.loads(done.stdout)
    assert shown["violations"] == [] and shown["figures"]["duplicated"] == 0
    assert shown["figures"]["kills"] == shown["figures"]["stops"] == 1
