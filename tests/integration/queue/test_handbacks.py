"""Hand-backs are counted on their own, with their own cap (issue 18, item 5).

A worker that stops before its handler returns hands the job back (jobs.release). The
hand-back does not use up an attempt, but it is counted (`handbacks`), and the hand-back
that reaches limits.MAX_HANDBACKS fails the job with a last_error that says why: a handler
that outlives every worker's shutdown timeout is not handed back for ever, and
max_attempts stays what the submitter asked for (the service caps it at 100).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cachequeue import db
from cachequeue.course.model.queue_model import QueueModel
from cachequeue.queue import jobs

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _status(conn, job_id):
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    return st.state, st.attempts, st.handbacks, st.max_attempts


def test_a_job_handed_back_again_and_again_fails_at_the_cap(conn):
    db.set_clock(conn, T0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1)
    assert jobs.release(conn, jobs.claim(conn, lease=30), "worker stopped")
    # max_attempts stays what the submitter asked for: the hand-back is counted apart.
    assert jobs.status(conn, tenant_id=1, job_id=job_id).max_attempts == 1
    for n in range(2, jobs.MAX_HANDBACKS):
        claim = jobs.claim(conn, lease=30)
        assert claim.attempt == n
        assert jobs.release(conn, claim, "worker stopped") == "pending"
        assert _status(conn, job_id) == ("pending", n, n, 1)
    last = jobs.claim(conn, lease=30)
    assert jobs.release(conn, last, "worker stopped") == "failed"
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.handbacks, st.max_attempts) == (
        "failed", jobs.MAX_HANDBACKS, jobs.MAX_HANDBACKS, 1)
    assert st.last_error.startswith(f"handed back {jobs.MAX_HANDBACKS} times, the most allowed")
    assert st.last_error.endswith("(last: worker stopped)") and st.finished_at == T0
    assert [h["outcome"] for h in jobs.history(conn, job_id)] == ["released"] * jobs.MAX_HANDBACKS
    assert jobs.claim(conn) is None  # failed: nobody runs it again


def test_a_hand_back_does_not_use_up_an_attempt_but_failures_still_do(conn):
    db.set_clock(conn, T0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=2)
    assert jobs.release(conn, jobs.claim(conn), "worker stopped") == "pending"
    assert jobs.fail(conn, jobs.claim(conn), "OSError: one") == "pending"  # 1 of 2 used
    assert _status(conn, job_id) == ("pending", 2, 1, 2)
    db.set_clock(conn, T0 + timedelta(hours=1))  # past the backoff
    assert jobs.fail(conn, jobs.claim(conn), "OSError: two") == "failed"  # 2 of 2 used
    assert _status(conn, job_id) == ("failed", 3, 1, 2)


def test_an_expired_lease_after_hand_backs_fails_on_the_attempts_that_count(conn):
    db.set_clock(conn, T0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1)
    assert jobs.release(conn, jobs.claim(conn, lease=5), "worker stopped") == "pending"
    jobs.claim(conn, lease=5)  # attempt 2, the only one that counts; its holder goes silent
    db.set_clock(conn, T0 + timedelta(seconds=6))
    assert jobs.claim(conn) is None
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.last_error) == ("failed", "lease expired on the last attempt (1 of 1)")


def test_a_manual_retry_gives_a_fresh_budget_of_hand_backs_too(conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1)
    for _ in range(jobs.MAX_HANDBACKS):
        jobs.release(conn, jobs.claim(conn), "worker stopped")
    assert _status(conn, job_id)[0] == "failed"
    assert jobs.retry(conn, tenant_id=1, job_id=job_id, actor="ops", reason="longer timeout")
    n = jobs.MAX_HANDBACKS
    assert _status(conn, job_id) == ("pending", n, 0, n + 1)  # one more attempt, 0 hand-backs
    assert jobs.release(conn, jobs.claim(conn), "worker stopped") == "pending"
    assert jobs.finish(conn, jobs.claim(conn), {"ok": True})
    assert _status(conn, job_id) == ("done", n + 2, 1, n + 1)


def test_the_model_hands_back_as_postgres_does(conn):
    db.set_clock(conn, T0)
    model = QueueModel()
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=2)
    assert model.submit(tenant_id=1, kind="noop", payload={}, max_attempts=2) == job_id
    outcomes = []
    for _ in range(jobs.MAX_HANDBACKS):
        pg, lab = jobs.claim(conn, lease=30), model.claim(lease=30)
        assert pg.attempt == lab.attempt
        outcomes.append((jobs.release(conn, pg, "stop"), model.release(lab, "stop")))
    assert outcomes == [("pending", "pending")] * (jobs.MAX_HANDBACKS - 1) + [("failed", "failed")]
    st, row = jobs.status(conn, tenant_id=1, job_id=job_id), model.job(job_id)
    assert (st.state, st.attempts, st.handbacks, st.max_attempts, st.last_error) == (
        row.state, row.attempts, row.handbacks, row.max_attempts, row.last_error)
    assert [h["outcome"] for h in jobs.history(conn, job_id)] == \
        [h["outcome"] for h in model.history(job_id)]
    assert model.release(lab, "again") is None and jobs.release(conn, pg, "again") is None
