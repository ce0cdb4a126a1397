"""The per-tenant submit bucket in the database (service.tenantlimits), on the database clock
stepped by hand: the burst, then 429 with Retry-After, then the rate; one bucket per tenant;
a refusal writes nothing."""

from datetime import UTC, datetime, timedelta

import pytest

from cachequeue import db
from cachequeue.service.problems import Problem
from cachequeue.service.tenantlimits import _QUERIES, TenantLimits, install

START = datetime(2030, 1, 1, tzinfo=UTC)


def bucket(conn, tenant_id):
    return conn.execute("SELECT tokens, updated_at FROM tenant_submit_buckets "
                        "WHERE tenant_id = %s", [tenant_id]).fetchone()


def test_a_tenant_gets_its_burst_then_429_with_retry_after_then_the_rate(conn):
    install(conn)
    install(conn)  # again: nothing happens
    limits = TenantLimits(submit_rate=0.5, submit_burst=3)
    db.set_clock(conn, START)
    for _ in range(3):
        limits.admit_submit(conn, 1)
    kept = bucket(conn, 1)
    with pytest.raises(Problem) as refused:
        limits.admit_submit(conn, 1)
    assert (refused.value.status, refused.value.code) == (429, "rate_limited")
    assert refused.value.headers == {"Retry-After": "2"}  # one token every 2 s
    assert bucket(conn, 1) == kept  # the refusal wrote nothing
    limits.admit_submit(conn, 2)  # another tenant has its own bucket
    db.set_clock(conn, START + timedelta(seconds=2))
    limits.admit_submit(conn, 1)
    with pytest.raises(Problem) as again:
        limits.admit_submit(conn, 1)
    assert again.value.headers == {"Retry-After": "2"}
    db.set_clock(conn, START + timedelta(seconds=60))  # refilled, but never above the burst
    for _ in range(3):
        limits.admit_submit(conn, 1)
    with pytest.raises(Problem):
        limits.admit_submit(conn, 1)
    assert limits.refused["rate_limited"] == 3


def test_a_clock_that_steps_back_refills_nothing(conn):
    install(conn)
    limits = TenantLimits(submit_rate=1, submit_burst=1)
    db.set_clock(conn, START)
    limits.admit_submit(conn, 1)
    db.set_clock(conn, START - timedelta(seconds=30))
    with pytest.raises(Problem):
        limits.admit_submit(conn, 1)
    db.set_clock(conn, START + timedelta(seconds=1))
    limits.admit_submit(conn, 1)


def test_hostile_tenant_ids_are_refused_before_any_statement(conn):
    limits = TenantLimits(submit_rate=1)
    with pytest.raises(TypeError):
        limits.admit_submit(conn, "1")
    with pytest.raises(ValueError):
        limits.admit_submit(conn, 0)


def test_the_pending_count_reads_an_index_not_the_table(conn):
    # 2,000 finished jobs, 3,000 pending of tenant 2 and 30 of tenant 1: without the index,
    # tenant 1's count reads the table or every tenant's pending jobs on every submit; with
    # it, only tenant 1's pending entries.
    conn.execute("INSERT INTO jobs (tenant_id, kind, payload, state) "
                 "SELECT 1, 'noop', '{}', 'done' FROM generate_series(1, 2000)")
    conn.execute("INSERT INTO jobs (tenant_id, kind, payload) "
                 "SELECT 1 + (g % 101 > 0)::int, 'noop', '{}' FROM generate_series(1, 3030) g")
    conn.execute("ANALYZE jobs")
    count = _QUERIES["pending_count"].sql
    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + count,
                                                   {"tenant_id": 1, "cap": 2000}))
    assert "jobs_fair" not in plan  # a fresh schema has no such index
    install(conn)
    conn.execute("VACUUM ANALYZE jobs")
    assert conn.execute(count, {"tenant_id": 1, "cap": 2000}).fetchone()[0] == 30
    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + count,
                                                   {"tenant_id": 1, "cap": 2000}))
    # An index-only scan once VACUUM could mark the pages all-visible; a bitmap scan of the
    # same index when another session's snapshot (a test running beside this one on the
    # server) kept it from doing so. Either reads tenant 1's pending entries, never the table.
    assert "jobs_fair" in plan and "Seq Scan" not in plan, plan
    assert ("Index Only Scan using jobs_fair" in plan
            or "Bitmap Index Scan on jobs_fair" in plan), plan
