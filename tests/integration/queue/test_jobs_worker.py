"""cachequeue.queue.single_pass: run_once and drain against real PostgreSQL, on a frozen clock."""

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from psycopg.pq import TransactionStatus

from cachequeue import db
from cachequeue.queue import jobs, single_pass
from cachequeue.queue.retry import PermanentError, RetryPolicy

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FAST = RetryPolicy(max_attempts=3, base=1.0, cap=1.0, jitter=False)


def always_fail(payload):
    raise RuntimeError("vendor unavailable")


HANDLERS = {"noop": lambda payload: {"echo": payload}, "always_fail": always_fail}


def test_the_chapter_exercise_bad_job_fails_after_three_good_job_is_done(conn):
    db.set_clock(conn, T0)
    bad = jobs.submit(conn, tenant_id=1, kind="always_fail", payload={}, max_attempts=3)
    good = jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": 1})
    total = Counter()
    for minute in range(1, 6):
        total += single_pass.drain(conn, HANDLERS, policy=FAST)
        db.set_clock(conn, T0 + timedelta(minutes=minute))  # let the backoff elapse
    assert total == Counter({"done": 1, "pending": 2, "failed": 1})
    bad_status = jobs.status(conn, tenant_id=1, job_id=bad)
    assert (bad_status.state, bad_status.attempts) == ("failed", 3)
    assert bad_status.last_error == "RuntimeError: vendor unavailable"
    good_status = jobs.status(conn, tenant_id=1, job_id=good)
    assert (good_status.state, good_status.output) == ("done", {"echo": {"n": 1}})
    assert conn.execute("SELECT array_agg(job_id) FROM job_results").fetchone()[0] == [good]


def test_a_permanent_error_fails_on_the_first_attempt(conn):
    def reject(payload):
        raise PermanentError("unsupported format")

    job_id = jobs.submit(conn, tenant_id=1, kind="summarise", payload={}, max_attempts=5)
    assert single_pass.run_once(conn, {"summarise": reject}) == "failed"
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.last_error) == (
        "failed", 1, "PermanentError: unsupported format")


def test_the_handler_runs_outside_any_transaction_after_the_claim_committed(conn, schema):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    seen = {}

    def look(payload):
        seen["tx"] = conn.info.transaction_status
        with db.connect(schema) as other:  # another session already sees the claim
            seen["state"] = jobs.status(other, tenant_id=1, job_id=job_id).state
        return "ok"

    assert single_pass.run_once(conn, {"noop": look}) == "done"
    assert seen == {"tx": TransactionStatus.IDLE, "state": "running"}


def test_a_lease_lost_while_working_is_reported_and_nothing_is_published(conn, schema):
    db.set_clock(conn, T0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})

    def slow(payload):
        with db.connect(schema) as other:  # while we work, the lease runs out and is reclaimed
            db.set_clock(other, T0 + timedelta(seconds=31))
            assert jobs.claim(other, lease=30) is not None
        return "late"

    assert single_pass.run_once(conn, {"noop": slow}, lease=30) == "lost"
    assert conn.execute("SELECT count(*) FROM job_results").fetchone()[0] == 0
    assert jobs.status(conn, tenant_id=1, job_id=job_id).attempts == 2

    cancelled = jobs.submit(conn, tenant_id=1, kind="flaky", payload={})

    def cancelled_meanwhile(payload):
        assert jobs.cancel(conn, tenant_id=1, job_id=cancelled, actor="u", reason="stop")
        raise RuntimeError("interrupted")

    assert single_pass.run_once(conn, {"flaky": cancelled_meanwhile}) == "lost"
    assert jobs.status(conn, tenant_id=1, job_id=cancelled).state == "cancelled"


def test_an_output_that_cannot_be_stored_fails_the_job_permanently(conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    assert single_pass.run_once(conn, {"noop": lambda p: {"at": object()}}) == "failed"
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert st.state == "failed" and st.last_error.startswith("InvalidJob: output")


def test_only_kinds_with_a_handler_are_claimed(conn):
    jobs.submit(conn, tenant_id=1, kind="summarise", payload={})
    assert single_pass.run_once(conn, {"noop": HANDLERS["noop"]}) is None
    assert jobs.claim(conn).kind == "summarise"


def test_drain_is_bounded_and_stops_when_nothing_is_claimable(conn):
    for n in range(5):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
    assert single_pass.drain(conn, HANDLERS, max_iterations=3) == Counter(done=3)
    assert single_pass.drain(conn, HANDLERS) == Counter(done=2)
    assert single_pass.drain(conn, HANDLERS) == Counter()
    assert single_pass.run_once(conn, HANDLERS) is None


@pytest.mark.parametrize("handlers, kwargs, error", [
    ({}, {}, ValueError),
    ([("noop", print)], {}, TypeError),
    ({"noop": "not callable"}, {}, TypeError),
    (HANDLERS, {"kinds": ["summarise"]}, ValueError),
    (HANDLERS, {"lease": 0}, ValueError),
])
def test_bad_arguments_are_refused_before_claiming(conn, handlers, kwargs, error):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with pytest.raises(error):
        single_pass.run_once(conn, handlers, **kwargs)
    assert jobs.claim(conn, lease=1) is not None  # the job was left unclaimed


def test_run_once_refuses_a_connection_inside_a_transaction(conn):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with conn.transaction(), pytest.raises(ValueError, match="outside any transaction"):
        single_pass.run_once(conn, HANDLERS)
    assert conn.execute("SELECT count(*) FROM jobs WHERE state = 'pending'").fetchone()[0] == 1
    with pytest.raises(ValueError, match="max_iterations"):
        single_pass.drain(conn, HANDLERS, max_iterations=0)
