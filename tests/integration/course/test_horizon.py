"""What an open transaction holds, seen from another connection (cachequeue.course.probes.horizon)."""

from __future__ import annotations

import psycopg
import pytest

from cachequeue import db
from cachequeue.course.probes import horizon
from cachequeue.queue import jobs


@pytest.fixture
def worker(schema):
    with db.connect(schema) as connection:
        yield connection


def test_an_idle_autocommit_session_holds_nothing(conn, worker):
    worker.execute("SELECT 1")
    assert horizon.activity(conn, worker) == horizon.Activity("idle", False, False)


def test_a_claim_left_open_holds_its_xid_and_row_lock_and_keeps_dead_rows(conn, worker):
    job = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    other = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    assert horizon.job_row_locked(conn, job) is False
    with worker.transaction():
        assert jobs.claim(worker).job_id == job
        worker.execute("SELECT 1")  # the claim's statement is over
        seen = horizon.activity(conn, worker)
        assert seen == horizon.Activity("idle in transaction", True, False)
        assert horizon.job_row_locked(conn, job) is True
        jobs.cancel(conn, tenant_id=1, job_id=other, actor="test", reason="a dead row version")
        assert horizon.vacuum_jobs(conn).kept >= 1
    assert horizon.activity(conn, worker).holds_xid is False
    assert horizon.job_row_locked(conn, job) is False


def test_read_committed_keeps_no_snapshot_between_statements_repeatable_read_does(conn, worker):
    with worker.transaction():
        worker.execute("SELECT count(*) FROM jobs")
        assert horizon.activity(conn, worker) == horizon.Activity(
            "idle in transaction", False, False)
    worker.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    with worker.transaction():
        worker.execute("SELECT count(*) FROM jobs")
        assert horizon.activity(conn, worker).holds_snapshot is True


def test_probes_refuse_a_connection_inside_a_transaction_and_name_a_missing_job(conn):
    with conn.transaction():
        with pytest.raises(ValueError, match="autocommit"):
            horizon.job_row_locked(conn, 1)
        with pytest.raises(ValueError, match="autocommit"):
            horizon.vacuum_jobs(conn)
    with pytest.raises(LookupError, match="no job with id 999"):
        horizon.job_row_locked(conn, 999)
