"""views.states.TRANSITIONS against the queue's SQL: each edge is taken by its operation on a
real PostgreSQL queue, and no other operation moves a job out of any state."""

from __future__ import annotations

import contextlib

import pytest

from cachequeue import db
from cachequeue.clock import ManualClock
from cachequeue.course.views import states
from cachequeue.queue import jobs
from cachequeue.queue.retry import RetryPolicy

RETRY = RetryPolicy(max_attempts=3, base=1.0, jitter=False)


class Queue:
    """One job on a frozen clock, and a way to read its state."""

    def __init__(self, conn, max_attempts=3):
        self.conn, self.clock = conn, ManualClock()
        db.set_clock(conn, self.clock.datetime())
        self.job = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=max_attempts)
        self.claim = None

    def state(self):
        return jobs.status(self.conn, tenant_id=1, job_id=self.job).state

    def advance(self, seconds):
        self.clock.advance(seconds)
        db.set_clock(self.conn, self.clock.datetime())

    def claimed(self, lease=10.0):
        self.claim = jobs.claim(self.conn, lease=lease, worker="w")
        assert self.claim.job_id == self.job
        return self


def _failed(q):
    q.claimed()
    assert jobs.fail(q.conn, q.claim, "boom", permanent=True) == "failed"
    return q


# operation -> (how to bring a fresh job into the source state, the operation itself)
def _takeover(q):
    q.advance(10)
    taken = jobs.claim(q.conn, lease=10.0, worker="other")
    assert (taken.job_id, taken.attempt) == (q.job, 2)


def _expired_last(q):
    q.advance(10)
    assert jobs.claim(q.conn, lease=10.0, worker="other") is None  # it is not taken over, it fails


def _release_capped(q):
    for _ in range(jobs.MAX_HANDBACKS - 1):  # hand-backs do not use up attempts
        assert jobs.release(q.conn, q.claim, "worker stopping") == "pending"
        q.claimed()
    jobs.release(q.conn, q.claim, "worker stopping")


OPERATIONS = {
    "claim": lambda q: q.claimed(),
    "finish": lambda q: jobs.finish(q.conn, q.claim, {"ok": True}),
    "fail_retry": lambda q: jobs.fail(q.conn, q.claim, "boom", policy=RETRY),
    "release": lambda q: jobs.release(q.conn, q.claim, "worker stopping"),
    "release_capped": _release_capped,
    "takeover": _takeover,
    "fail_final": lambda q: jobs.fail(q.conn, q.claim, "boom", permanent=True),
    "expired_last": _expired_last,
    "cancel": lambda q: jobs.cancel(q.conn, tenant_id=1, job_id=q.job, actor="t", reason="r"),
    "retry": lambda q: jobs.retry(q.conn, tenant_id=1, job_id=q.job, actor="t", reason="r"),
}

SETUPS = {
    "pending": lambda conn, op: Queue(conn),
    "running": lambda conn, op: Queue(conn, max_attempts=1 if op == "expired_last" else 3).claimed(),
    "failed": lambda conn, op: _failed(Queue(conn)),
}


@pytest.mark.parametrize("edge", states.TRANSITIONS, ids=lambda t: f"{t.source}-{t.operation}")
def test_each_edge_is_taken_by_its_operation(conn, edge):
    q = SETUPS[edge.source](conn, edge.operation)
    assert q.state() == edge.source
    OPERATIONS[edge.operation](q)
    assert q.state() == edge.target


def test_every_operation_has_a_driver_and_every_state_a_row():
    assert {t.operation for t in states.TRANSITIONS} == set(OPERATIONS)
    assert {s for t in states.TRANSITIONS for s in (t.source, t.target)} == set(states.STATES)


def _in_state(conn, state):
    if state in SETUPS:
        return SETUPS[state](conn, None)
    q = Queue(conn).claimed()
    if state == "done":
        assert jobs.finish(conn, q.claim, {"ok": True})
    else:
        assert jobs.cancel(conn, tenant_id=1, job_id=q.job, actor="t", reason="r")
    return q


NEEDS_A_CLAIM = {"finish", "fail_retry", "release", "release_capped", "fail_final"}
CLAIMS = {"claim", "takeover", "expired_last"}


@pytest.mark.parametrize("state", states.STATES)
def test_no_other_operation_moves_a_job_out_of_a_state(conn, state):
    allowed = {t.operation for t in states.TRANSITIONS if t.source == state and t.target != state}
    if allowed & CLAIMS:
        allowed |= CLAIMS  # the takeover drivers run the claim statement too
    tried = []
    for operation in sorted(set(OPERATIONS) - allowed):
        conn.execute("TRUNCATE jobs CASCADE")  # this job alone in the queue
        q = _in_state(conn, state)
        if operation in NEEDS_A_CLAIM and q.claim is None:
            continue  # no worker ever held this pending job: there is nothing to report with
        # a finish/fail/release here uses an earlier attempt's claim; a driver's own
        # expectation may not hold (no job to take over), which is the point
        with contextlib.suppress(AssertionError, AttributeError):
            OPERATIONS[operation](q)
        assert q.state() == state, f"{operation} moved a {state} job to {q.state()}"
        tried.append(operation)
    assert tried, "every state refuses some operations"


def test_highlight_must_name_operations():
    with pytest.raises(ValueError, match="no operation"):
        states.plot_states(["explode"])
    fig = states.plot_states(["retry"])
    assert fig.axes[0].get_title() == "任务的状态与转移"
