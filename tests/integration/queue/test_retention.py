"""Retention: finished jobs older than a policy deleted in bounded batches, never a pending
or running one, also while workers claim and finish around the purge."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from cachequeue import db
from cachequeue.course.probes import plans
from cachequeue.queue import jobs, retention

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _finished(conn, n, *, fail=False):
    ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1)
           for _ in range(n)]
    for claim in jobs.claim_many(conn, n):
        if fail:
            assert jobs.fail(conn, claim, "TimeoutError: x") == "failed"
        else:
            assert jobs.finish(conn, claim, {"ok": claim.job_id})
    return ids


def _count(conn, table="jobs"):
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608 (a constant)


def test_only_finished_jobs_older_than_the_policy_go(conn):
    retention.install(conn)
    db.set_clock(conn, T0)
    old_done = _finished(conn, 3)
    old_failed = _finished(conn, 2, fail=True)
    db.set_clock(conn, T0 + timedelta(hours=2))
    young = _finished(conn, 2)
    running = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    assert jobs.claim(conn, lease=3600 * 24).job_id == running
    pending = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    db.set_clock(conn, T0 + timedelta(hours=2, minutes=30))
    assert retention.due(conn, older_than=3600) == 5
    report = retention.purge(conn, older_than=3600, batch_size=2)
    assert (report.deleted, report.batches, report.complete) == (5, 3, True)
    assert report.by_state == {"done": 3, "failed": 2}
    for job_id in old_done + old_failed:
        assert jobs.status(conn, tenant_id=1, job_id=job_id) is None  # gone, like an unknown job
    assert [jobs.status(conn, tenant_id=1, job_id=j).state for j in young] == ["done", "done"]
    assert jobs.status(conn, tenant_id=1, job_id=pending).state == "pending"
    assert jobs.status(conn, tenant_id=1, job_id=running).state == "running"
    # older_than=0 takes the young finished jobs too, and still no pending or running one.
    assert retention.purge(conn, older_than=0).deleted == 2
    assert _count(conn) == 2 and _count(conn, "job_results") == 0
    assert _count(conn, "job_attempts") == 1  # the running job's open attempt


def test_states_and_max_batches_bound_a_call(conn):
    retention.install(conn)
    _finished(conn, 5)
    _finished(conn, 3, fail=True)
    report = retention.purge(conn, older_than=0, states=["failed"], batch_size=1, max_batches=2)
    assert (report.deleted, report.batches, report.complete) == (2, 2, False)
    assert retention.purge_batch(conn, older_than=0, states=("failed",), batch_size=5) \
        and _count(conn) == 5
    assert retention.purge(conn, older_than=0, states=("failed",)).deleted == 0


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"older_than": -1}, ValueError),
    ({"older_than": float("nan")}, ValueError),
    ({"older_than": "1 day"}, TypeError),
    ({"older_than": 0, "states": ["pending"]}, ValueError),
    ({"older_than": 0, "states": ["running", "done"]}, ValueError),
    ({"older_than": 0, "states": []}, ValueError),
    ({"older_than": 0, "states": "done"}, TypeError),
    ({"older_than": 0, "batch_size": 0}, ValueError),
    ({"older_than": 0, "batch_size": retention.MAX_BATCH + 1}, ValueError),
    ({"older_than": 0, "batch_size": True}, TypeError),
    ({"older_than": 0, "max_batches": 0}, ValueError),
])
def test_refused_arguments_write_nothing(conn, kwargs, error):
    _finished(conn, 2)
    with pytest.raises(error):
        retention.purge(conn, **kwargs)
    assert _count(conn) == 2


def test_a_purge_inside_a_transaction_is_refused(conn):
    _finished(conn, 1)
    with conn.transaction(), pytest.raises(ValueError, match="autocommit"):
        retention.purge(conn, older_than=0)
    assert _count(conn) == 1


def test_purge_under_concurrent_workers_never_takes_a_live_job(conn, schema):
    """Three workers drain 600 jobs while a purger deletes every finished job as soon as it
    is finished (older_than=0): every finish still lands (no running job was deleted),
    every job is finished exactly once (no pending job was deleted), and at the end the
    table is empty."""
    retention.install(conn)
    plans.fill_pending(conn, 600)
    stop = threading.Event()
    finished, purged, errors = [], [], []

    def work():
        with db.connect(schema) as own:
            while claims := jobs.claim_many(own, 7):
                results = jobs.finish_many(own, [(c, {"n": c.job_id}) for c in claims])
                if not all(results):
                    errors.append(("finish refused", claims))
                finished.extend(c.job_id for c in claims)

    def purge():
        with db.connect(schema) as own:
            while not stop.is_set():
                purged.extend(j for j, _ in retention.purge_batch(own, older_than=0,
                                                                  batch_size=25))

    purger = threading.Thread(target=purge)
    purger.start()
    workers = [threading.Thread(target=work) for _ in range(3)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(120)
    stop.set()
    purger.join(60)
    assert not errors
    assert sorted(finished) == list(range(1, 601))  # each job claimed and finished once
    purged += [j for j, _ in retention.purge_batch(conn, older_than=0, batch_size=1000)]
    assert sorted(purged) == list(range(1, 601))
    assert _count(conn) == _count(conn, "job_results") == _count(conn, "job_attempts") == 0
