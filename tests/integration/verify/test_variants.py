"""Each mutant's statement, step by step on a manual clock, beside the real one: the one
safeguard it takes out is exactly what the real statement keeps. (The seeded runs of
test_verify_runs.py show the checker catching each mutant; this shows what it catches.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cachequeue import db
from cachequeue.queue import jobs, registry
from cachequeue.verify import variants

T0 = datetime.now(UTC) + timedelta(hours=1)  # after every submit's run_after


@pytest.fixture
def mutant(monkeypatch):
    """Install a mutant in this test process; the real functions come back afterwards."""
    for name in ("finish", "finish_many", "claim_many"):
        monkeypatch.setattr(jobs, name, getattr(jobs, name))
    monkeypatch.setattr(registry, "beat", registry.beat)
    return variants.install


def at(conn, seconds):
    db.set_clock(conn, T0 + timedelta(seconds=seconds))


def expired_then_taken_over(conn):
    """A claim whose lease (10 s) ran out and another worker's claim that took over."""
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    at(conn, 0)
    old = jobs.claim(conn, lease=10, worker="a")
    at(conn, 20)
    new = jobs.claim(conn, lease=10, worker="b")
    assert new.job_id == old.job_id and new.attempt == 2
    return old, new


def test_no_token_check_finishes_with_an_outdated_token(conn, mutant):
    old, new = expired_then_taken_over(conn)
    assert jobs.finish(conn, old, {"by": "a"}) is False  # the real finish refuses it
    mutant("no-token-check")
    assert jobs.finish(conn, old, {"by": "a"}) is True  # the mutant does not
    assert jobs.finish(conn, new, {"by": "b"}) is False  # and the holder is refused


def test_unfenced_batch_finishes_by_job_id_alone(conn, mutant):
    old, new = expired_then_taken_over(conn)
    assert jobs.finish_many(conn, [(old, 1)]) == [False]
    mutant("unfenced-batch")
    assert jobs.finish_many(conn, [(old, 1)]) == [True]


def test_heartbeat_after_expiry_renews_a_lease_that_ran_out(conn, mutant):
    registry.install(conn)
    registry.register(conn, "a")
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    at(conn, 0)
    claim = jobs.claim(conn, lease=10, worker="a")
    at(conn, 15)  # expired, nobody took it over yet
    assert registry.beat(conn, "a", [claim], 10) == set()
    mutant("heartbeat-after-expiry")
    assert registry.beat(conn, "a", [claim], 10) == {claim.lease_token}


def test_reset_on_shutdown_hands_back_other_workers_jobs(conn, mutant):
    for _ in range(2):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    at(conn, 0)
    mine = jobs.claim(conn, lease=10, worker="a")
    theirs = jobs.claim(conn, lease=10, worker="b")
    assert variants.on_shutdown("real", conn) == 0
    assert variants.on_shutdown("reset-on-shutdown", conn) == 2
    again = jobs.claim_many(conn, 2, lease=10, worker="c")  # while both leases run
    assert {c.job_id for c in again} == {mine.job_id, theirs.job_id}
    assert jobs.finish(conn, theirs, None) is False  # b, still working, has lost its job


def test_read_then_claim_lets_two_readers_take_one_job(conn, schema, mutant):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    at(conn, 0)
    with db.connect(schema) as other:
        at(other, 0)
        read_a = variants.read_candidates(conn, 1)
        read_b = variants.read_candidates(other, 1)  # both read the same pending job
        a = variants.claim_read(conn, read_a, lease=10, worker="a")
        b = variants.claim_read(other, read_b, lease=10, worker="b")
    assert [c.job_id for c in a] == [c.job_id for c in b]  # one job, two holders
    assert (a[0].attempt, b[0].attempt) == (1, 2) and b[0].locked_until == a[0].locked_until
    # The real claim locks what it reads and checks it again: of two claims in a row for
    # one new job, the second finds nothing (and the mutant's running job is not taken).
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    assert len(jobs.claim_many(conn, 5, lease=10)) == 1
    assert jobs.claim_many(conn, 5, lease=10) == []
