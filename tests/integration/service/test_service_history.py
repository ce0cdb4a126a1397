"""A job's events, derived from the queue's tables, through every transition: each step adds
exactly the expected event at the end, numbers never change (so Last-Event-ID stays valid),
and the last event's state is always the job's state."""

from cachequeue import db
from cachequeue.clock import ManualClock
from cachequeue.queue import jobs
from cachequeue.service.events import history


class Recorder:
    """Runs queue operations on a frozen database clock and checks the history after each."""

    def __init__(self, conn, job_id):
        self.conn, self.job_id, self.events = conn, job_id, []

    def check(self, *added):
        found = history(self.conn, tenant_id=1, job_id=self.job_id).events
        assert found[: len(self.events)] == self.events, "earlier events never change"
        new = [(e.event, e.state, e.attempt) for e in found[len(self.events):]]
        assert new == list(added)
        assert [e.seq for e in found] == list(range(1, len(found) + 1))
        status = jobs.status(self.conn, tenant_id=1, job_id=self.job_id)
        assert found[-1].state == status.state
        self.events = found
        tail = history(self.conn, tenant_id=1, job_id=self.job_id, after=len(found) - 1)
        assert tail.events == found[-1:] and tail.state == status.state


def frozen(conn):
    clock = ManualClock()
    db.set_clock(conn, clock.datetime())

    def advance(seconds):
        clock.advance(seconds)
        db.set_clock(conn, clock.datetime())
    return advance


def test_retry_then_done(conn):
    advance = frozen(conn)
    r = Recorder(conn, jobs.submit(conn, tenant_id=1, kind="noop", payload={}))
    r.check(("accepted", "pending", 0))
    claim = jobs.claim(conn, lease=30)
    r.check(("started", "running", 1))
    assert jobs.fail(conn, claim, "vendor timed out") == "pending"
    r.check(("retrying", "pending", 1))
    assert r.events[-1].error == "vendor timed out"
    advance(3600)
    claim = jobs.claim(conn, lease=30)
    r.check(("started", "running", 2))
    jobs.finish(conn, claim, {"ok": True})
    r.check(("done", "done", 2))


def test_takeover_release_and_cancel_while_pending(conn):
    advance = frozen(conn)
    r = Recorder(conn, jobs.submit(conn, tenant_id=1, kind="noop", payload={}))
    r.check(("accepted", "pending", 0))
    old = jobs.claim(conn, lease=30, worker="a")
    r.check(("started", "running", 1))
    advance(31)
    new = jobs.claim(conn, lease=30, worker="b")  # the expired lease is taken over
    r.check(("started", "running", 2))
    assert jobs.finish(conn, old, {}) is False  # a refused late report is no event
    r.check()
    assert jobs.release(conn, new, "worker stopping")
    r.check(("released", "pending", 2))
    assert jobs.cancel(conn, tenant_id=1, job_id=r.job_id, actor="ops", reason="not needed")
    r.check(("cancelled", "cancelled", 2))


def test_last_lease_expires_then_an_operator_retries_and_cancels(conn):
    advance = frozen(conn)
    r = Recorder(conn, jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1))
    r.check(("accepted", "pending", 0))
    jobs.claim(conn, lease=30)
    r.check(("started", "running", 1))
    advance(31)
    assert jobs.claim(conn, lease=30) is None  # fails the exhausted job on the way
    r.check(("failed", "failed", 1))
    assert jobs.retry(conn, tenant_id=1, job_id=r.job_id, actor="ops", reason="vendor is back")
    r.check(("requeued", "pending", 1))
    jobs.claim(conn, lease=30)
    r.check(("started", "running", 2))
    assert jobs.cancel(conn, tenant_id=1, job_id=r.job_id, actor="ops", reason="too late")
    r.check(("cancelled", "cancelled", 2))


def test_cancelled_before_any_attempt_and_other_tenants(conn):
    frozen(conn)
    r = Recorder(conn, jobs.submit(conn, tenant_id=1, kind="noop", payload={}))
    r.check(("accepted", "pending", 0))
    jobs.cancel(conn, tenant_id=1, job_id=r.job_id, actor="user", reason="changed my mind")
    r.check(("cancelled", "cancelled", 0))
    hidden = history(conn, tenant_id=2, job_id=r.job_id)
    assert (hidden.found, hidden.events) == (False, [])
    assert history(conn, tenant_id=1, job_id=r.job_id, after=2).events == []
