"""Leases, reclaims, heartbeats, the attempt cap, backoff and deadlines, on a frozen database clock."""

import random
from datetime import timedelta

import pytest
from frozen import T0, at

from cachequeue import db
from cachequeue.queue import jobs
from cachequeue.queue.retry import RetryPolicy


@pytest.fixture
def conn2(schema):
    """A second session on the same schema: a second worker."""
    with db.connect(schema) as connection:
        yield connection


def results(conn):
    return conn.execute("SELECT job_id, output, lease_token FROM job_results").fetchall()


def test_claim_sets_a_lease_on_the_database_clock(conn):
    at(conn, 0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={"a": 1})
    claim = jobs.claim(conn, lease=30, worker="w1")
    assert (claim.job_id, claim.tenant_id, claim.kind, claim.payload, claim.attempt) == (
        job_id, 1, "noop", {"a": 1}, 1)
    assert claim.locked_until == T0 + timedelta(seconds=30) and claim.worker == "w1"
    [row] = jobs.history(conn, job_id)
    assert (row["started_at"], row["lease_token"], row["outcome"]) == (T0, claim.lease_token, None)
    # A held, unexpired lease is not claimable by anyone else.
    at(conn, 29.999)
    assert jobs.claim(conn) is None


def test_finish_with_an_old_token_after_a_reclaim_returns_false_and_writes_nothing(conn, conn2):
    at(conn, 0)
    at(conn2, 0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    old = jobs.claim(conn, lease=30, worker="slow")
    at(conn2, 31)  # the lease has expired; a second worker takes the job
    new = jobs.claim(conn2, lease=30, worker="fast")
    assert (new.job_id, new.attempt) == (job_id, 2) and new.lease_token != old.lease_token
    # The slow worker comes back. Even with its own clock still inside its old lease, the
    # token no longer matches: nothing is written.
    assert jobs.finish(conn, old, {"by": "slow"}) is False
    assert jobs.heartbeat(conn, old) is False
    assert jobs.fail(conn, old, "late") is None
    assert results(conn) == []
    assert jobs.status(conn, tenant_id=1, job_id=job_id).state == "running"
    assert jobs.finish(conn2, new, {"by": "fast"}) is True
    assert results(conn) == [(job_id, {"by": "fast"}, new.lease_token)]
    history = jobs.history(conn, job_id)
    assert [(h["attempt"], h["worker"], h["outcome"]) for h in history] == [
        (1, "slow", "expired"), (2, "fast", "done")]
    assert history[0]["finished_at"] == T0 + timedelta(seconds=30)  # when the lease ended


def test_finish_after_the_lease_expired_is_rejected_even_before_a_reclaim(conn):
    at(conn, 0)
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn, lease=10)
    at(conn, 10)  # locked_until is not > now any more
    assert jobs.finish(conn, claim, {}) is False
    assert results(conn) == []


def test_heartbeat_extends_a_held_lease_and_fails_once_it_is_lost(conn, conn2):
    at(conn, 0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn, lease=30)
    at(conn, 20)
    assert jobs.heartbeat(conn, claim, lease=30) is True
    locked_until = conn.execute("SELECT locked_until FROM jobs WHERE id = %s",
                                [job_id]).fetchone()[0]
    assert locked_until == T0 + timedelta(seconds=50)
    at(conn2, 40)  # past the first lease, inside the renewed one
    assert jobs.claim(conn2) is None
    at(conn, 45)
    assert jobs.finish(conn, claim, {"ok": 1}) is True
    # A heartbeat after expiry reports the loss instead of reviving the lease.
    at(conn, 0)
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    second = jobs.claim(conn, lease=5)
    at(conn, 6)
    assert jobs.heartbeat(conn, second, lease=30) is False


def test_expired_lease_on_the_last_attempt_ends_failed(conn):
    at(conn, 0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1)
    jobs.claim(conn, lease=10, worker="w1")
    at(conn, 11)
    assert jobs.claim(conn) is None  # not runnable: it had no attempts left
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.finished_at) == ("failed", 1, T0 + timedelta(seconds=11))
    assert "lease expired" in st.last_error
    [row] = jobs.history(conn, job_id)
    assert (row["outcome"], row["finished_at"]) == ("expired", T0 + timedelta(seconds=10))


def test_the_attempt_cap_ends_in_failed_and_does_not_block_a_good_job(conn):
    at(conn, 0)
    bad = jobs.submit(conn, tenant_id=1, kind="always_fail", payload={}, max_attempts=3)
    good = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    policy = RetryPolicy(max_attempts=3, base=1.0, cap=1.0, jitter=False)
    states, now = [], 0
    while (claim := jobs.claim(conn)) is not None:
        if claim.kind == "always_fail":
            states.append(jobs.fail(conn, claim, RuntimeError(f"try {claim.attempt}"),
                                    policy=policy))
        else:
            assert jobs.finish(conn, claim, "ok")
        now += 2
        at(conn, now)
    assert states == ["pending", "pending", "failed"]
    bad_status = jobs.status(conn, tenant_id=1, job_id=bad)
    assert (bad_status.state, bad_status.attempts, bad_status.last_error) == (
        "failed", 3, "RuntimeError: try 3")
    assert jobs.status(conn, tenant_id=1, job_id=good).state == "done"
    assert [r[0] for r in results(conn)] == [good]
    assert [h["outcome"] for h in jobs.history(conn, bad)] == ["retry", "retry", "failed"]


def test_the_smaller_cap_of_job_and_policy_wins(conn):
    at(conn, 0)
    jobs.submit(conn, tenant_id=1, kind="flaky", payload={}, max_attempts=5)
    claim = jobs.claim(conn)
    assert jobs.fail(conn, claim, "x", policy=RetryPolicy(max_attempts=1)) == "failed"


def test_without_a_policy_the_jobs_own_max_attempts_decides(conn):
    at(conn, 0)
    jobs.submit(conn, tenant_id=1, kind="flaky", payload={}, max_attempts=5)
    states = []
    for step in range(5):
        at(conn, 100 * step)  # past any default backoff (cap 60 s)
        states.append(jobs.fail(conn, jobs.claim(conn), "x"))
    assert states == ["pending"] * 4 + ["failed"]


def test_backoff_sets_run_after_from_the_policy(conn):
    at(conn, 100)
    job_id = jobs.submit(conn, tenant_id=1, kind="flaky", payload={}, max_attempts=5)
    fixed = RetryPolicy(max_attempts=5, base=10.0, cap=25.0, jitter=False)
    expected = []
    for attempt, delay in enumerate([10.0, 20.0, 25.0], start=1):
        claim = jobs.claim(conn)
        assert claim.attempt == attempt
        assert jobs.fail(conn, claim, "busy", policy=fixed) == "pending"
        run_after = jobs.status(conn, tenant_id=1, job_id=job_id).run_after
        now = conn.execute("SELECT cq_now()").fetchone()[0]
        expected.append(delay)
        assert run_after - now == timedelta(seconds=delay)
        assert jobs.claim(conn) is None  # not before run_after
        db.set_clock(conn, run_after)
    # With jitter, the delay is the policy's draw for that attempt from the same seed.
    jittered = RetryPolicy(max_attempts=5, base=10.0, cap=25.0)
    claim = jobs.claim(conn)
    now = conn.execute("SELECT cq_now()").fetchone()[0]
    assert jobs.fail(conn, claim, "busy", policy=jittered, rng=random.Random(3)) == "pending"
    drawn = jittered.delay(claim.attempt, random.Random(3))
    assert 0 <= drawn <= 25.0
    got = jobs.status(conn, tenant_id=1, job_id=job_id).run_after - now
    assert abs(got.total_seconds() - drawn) < 1e-5


def test_no_retry_is_scheduled_after_the_deadline(conn):
    at(conn, 0)
    policy = RetryPolicy(max_attempts=10, base=10.0, cap=10.0, jitter=False)
    job_deadline = jobs.submit(conn, tenant_id=1, kind="flaky", payload={}, deadline=15)
    claim = jobs.claim(conn)
    assert jobs.fail(conn, claim, "busy", policy=policy) == "pending"  # retry at 10 <= 15
    at(conn, 10)
    claim = jobs.claim(conn)
    assert jobs.fail(conn, claim, "busy", policy=policy) == "failed"  # retry at 20 > 15
    assert jobs.status(conn, tenant_id=1, job_id=job_deadline).attempts == 2
    # The policy's deadline counts from submit (created_at).
    at(conn, 100)
    jobs.submit(conn, tenant_id=1, kind="flaky", payload={})
    claim = jobs.claim(conn)
    short = RetryPolicy(max_attempts=10, base=10.0, cap=10.0, jitter=False, deadline=5.0)
    assert jobs.fail(conn, claim, "busy", policy=short) == "failed"


def test_a_permanent_error_fails_at_once_and_keeps_the_reason(conn):
    at(conn, 0)
    job_id = jobs.submit(conn, tenant_id=1, kind="summarise", payload={}, max_attempts=5)
    claim = jobs.claim(conn)
    long_reason = "unsupported format: " + "x" * 5000
    assert jobs.fail(conn, claim, ValueError(long_reason), permanent=True) == "failed"
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.finished_at) == ("failed", 1, T0)
    assert st.last_error.startswith("ValueError: unsupported format")
    assert len(st.last_error) == jobs.MAX_ERROR_CHARS
    assert jobs.history(conn, job_id)[0]["error"] == st.last_error
    assert jobs.claim(conn) is None


def test_run_after_delays_the_first_claim(conn):
    at(conn, 0)
    later = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, run_after=60)
    soon = jobs.submit(conn, tenant_id=1, kind="noop", payload={},
                       run_after=T0 + timedelta(seconds=30))
    assert jobs.claim(conn) is None
    at(conn, 30)
    assert jobs.claim(conn, lease=100).job_id == soon
    at(conn, 60)
    assert jobs.claim(conn, lease=100).job_id == later


def test_claim_many_takes_expired_leases_first_then_the_oldest_due_jobs(conn):
    at(conn, 0)
    ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n}) for n in range(5)]
    first = jobs.claim(conn, lease=10)
    assert first.job_id == ids[0]
    at(conn, 11)
    batch = jobs.claim_many(conn, 3, lease=10)
    assert [(c.job_id, c.attempt) for c in batch] == [(ids[0], 2), (ids[1], 1), (ids[2], 1)]
    assert len({c.lease_token for c in batch}) == 3
    assert [c.job_id for c in jobs.claim_many(conn, 10)] == ids[3:]


def test_a_claim_commits_asynchronously_but_never_weakens_the_callers_transaction(conn):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"
    # The claim statement itself turns synchronous_commit off, for its transaction only.
    with conn.transaction():
        conn.execute(jobs.query("claim").sql,
                     {"limit": 1, "lease": 30.0, "kinds": None, "worker": "raw", "chosen": None}).fetchall()
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "off"
    assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"
    # jobs.claim inside a caller's transaction puts the caller's setting back.
    with conn.transaction():
        assert jobs.claim(conn) is not None
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"
    assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"
