"""The chapter 03 probes: the naive two-step claim, SKIP LOCKED counts, session states,
the metrics tables, and the in-process timers that die with their process."""

import os
import signal
from datetime import datetime

import pytest

from cachequeue import db
from cachequeue.clock import ManualClock
from cachequeue.course.probes import naive
from cachequeue.course.procs import timers
from cachequeue.course.views import frames as metrics
from cachequeue.queue import jobs

pytestmark = pytest.mark.db


@pytest.fixture
def conn2(schema):
    with db.connect(schema) as connection:
        yield connection


def submit(conn, n=1):
    return [jobs.submit(conn, tenant_id=1, kind="noop", payload={"i": i}) for i in range(n)]


def test_two_step_claim_lets_two_workers_take_the_same_job(conn, conn2):
    [job_id] = submit(conn)
    assert naive.pick(conn) == naive.pick(conn2) == job_id
    first = naive.take(conn, job_id, worker="a")
    second = naive.take(conn2, job_id, worker="b")
    assert first != second  # both got a token; only the second is still on the row
    row = conn.execute("SELECT attempts, locked_by, lease_token FROM jobs").fetchone()
    assert row == (2, "b", second)
    with pytest.raises(LookupError):
        naive.take(conn, 999, worker="a")
    with pytest.raises(ValueError):
        naive.take(conn, job_id, worker="a", lease=0)


def test_two_step_claim_with_the_state_rechecked_lets_one_worker_take_it(conn, conn2):
    [job_id] = submit(conn)
    assert naive.pick(conn) == naive.pick(conn2) == job_id
    first = naive.take_pending(conn, job_id, worker="a")
    assert first is not None
    assert naive.take_pending(conn2, job_id, worker="b") is None  # no longer pending
    row = conn.execute("SELECT attempts, locked_by, lease_token FROM jobs").fetchone()
    assert row == (1, "a", first)  # b wrote nothing
    assert naive.take_pending(conn, 999, worker="a") is None
    with pytest.raises(ValueError):
        naive.take_pending(conn, job_id, worker="a", lease=0)


def test_skip_locked_count_leaves_out_rows_another_transaction_holds(conn, conn2):
    submit(conn, 3)
    with conn2.transaction():
        held = jobs.claim(conn2)
        assert held is not None
        assert naive.session_state(conn, conn2) == "idle in transaction"
        assert naive.count_pending(conn) == 3
        assert naive.count_pending(conn, skip_locked=True) == 2
    assert naive.session_state(conn, conn2) == "idle"
    assert naive.count_pending(conn) == naive.count_pending(conn, skip_locked=True) == 2


def test_jobs_frame_and_state_counts(conn):
    clock = ManualClock()
    db.set_clock(conn, clock.datetime())
    a, b = submit(conn, 2)
    jobs.finish(conn, jobs.claim(conn, lease=5), {"ok": 1})
    frame = metrics.jobs_frame(conn, epoch=clock.epoch)
    assert list(frame.columns) == metrics.JOB_COLUMNS
    assert frame[["job_id", "state", "has_result", "finished_at"]].values.tolist() == [
        [a, "done", True, 0.0], [b, "pending", False, None]]
    assert metrics.state_counts(conn) == {"pending": 1, "running": 0, "done": 1, "failed": 0,
                                          "cancelled": 0}


def test_timers_vanish_with_their_process_but_the_job_stays(schema, conn, tmp_path):
    (tmp_path / "lived").mkdir()
    (tmp_path / "killed").mkdir()
    proc, lived = timers.start(schema, tmp_path / "lived", delay=0.01)
    assert proc.wait(30) == 0
    assert timers.fired(tmp_path / "lived") == ["asyncio.call_later", "threading.Timer"]
    clock = ManualClock(7)
    proc, job_id = timers.start(schema, tmp_path / "killed", delay=3600, at=clock.datetime())
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    assert timers.fired(tmp_path / "killed") == []
    killed = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (killed.state, killed.created_at) == ("pending", clock.datetime())
    assert {c.job_id for c in jobs.claim_many(conn, 5)} == {lived, job_id}


def test_timers_start_reports_a_child_that_cannot_start(tmp_path):
    with pytest.raises(RuntimeError, match="did not start"):
        timers.start("no_such_schema_x", tmp_path / "missing", delay=1)
    with pytest.raises(ValueError):
        timers.start("x", tmp_path, delay=-1)
    with pytest.raises(ValueError):
        timers.start("x", tmp_path, delay=1, at=datetime(2026, 1, 1))
