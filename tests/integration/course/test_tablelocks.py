"""Locks on the jobs table: the readiness probe takes no transaction id where a row lock
does; an index build makes it not ready and makes writes wait, without writing anything."""

import psycopg
import pytest

from cachequeue import db
from cachequeue.course.probes import horizon, tablelocks
from cachequeue.queue import jobs
from cachequeue.service import operations


def test_the_probe_takes_no_transaction_id_and_a_row_lock_does(conn, schema):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with db.connect(schema) as observer:
        with conn.transaction():
            assert operations.check_ready(conn, 2.0) == 1
            assert not horizon.activity(observer, conn).holds_xid
        with conn.transaction():
            assert tablelocks.lock_next_job(conn) == 1
            assert horizon.activity(observer, conn).holds_xid


def test_an_index_build_makes_the_probe_not_ready(conn, schema):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with tablelocks.index_build_lock(schema), pytest.raises(operations.NotReady, match="ShareLock"):
        operations.check_ready(conn, 2.0)
    assert operations.check_ready(conn, 2.0) == 1


def test_writes_wait_behind_an_index_build_and_write_nothing(conn, schema):
    assert tablelocks.writes_wait(schema) == {"submit": False, "claim": False}
    with tablelocks.index_build_lock(schema):
        assert tablelocks.writes_wait(schema) == {"submit": True, "claim": True}
    assert jobs.claim(conn) is None  # the tries were rolled back: no job was left behind


def test_a_migration_lock_makes_even_reads_wait(conn, schema):
    with db.connect(schema) as reader:
        reader.execute("SET lock_timeout = '100ms'")
        with tablelocks.migration_lock(schema), pytest.raises(psycopg.errors.LockNotAvailable):
            jobs.status(reader, tenant_id=1, job_id=1)
