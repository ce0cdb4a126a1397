"""queue.health: who holds the horizon, the jobs table's statistics, alerts on thresholds."""

from __future__ import annotations

import pytest

from cachequeue import db
from cachequeue.queue import health


def test_a_session_idle_in_transaction_after_a_write_is_a_holder(conn, schema):
    with db.connect(schema) as other:
        other.execute("BEGIN")
        xid = other.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()[0]
        for _ in range(3):
            conn.execute("SELECT pg_current_xact_id()")  # three more transaction ids used
        found = [h for h in health.horizon_holders(conn, limit=1000)
                 if h.pid == other.info.backend_pid]
        assert len(found) == 1 and found[0].source == "backend"
        assert found[0].state == "idle in transaction" and found[0].xmin_age >= 3
        assert xid > 0
        problems = health.alerts(conn, max_xmin_age=1, max_dead_tuples=10**9)
        assert problems and problems[0].metric == "xmin_age"
        other.execute("ROLLBACK")
    assert conn.info.backend_pid not in {h.pid for h in health.horizon_holders(conn, limit=1000)}


def test_table_health_reads_per_table_settings(conn):
    before = health.table_health(conn)
    assert before.vacuum_scale_factor == pytest.approx(0.2) or before.vacuum_scale_factor >= 0
    conn.execute("ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0, "
                 "autovacuum_vacuum_threshold = 500)")
    after = health.table_health(conn)
    assert (after.vacuum_scale_factor, after.vacuum_threshold) == (0.0, 500.0)
    assert after.autovacuum_trigger == 500


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"max_xmin_age": 0, "max_dead_tuples": 0}, ValueError),
    ({"max_xmin_age": 2**31 + 1, "max_dead_tuples": 0}, ValueError),
    ({"max_xmin_age": 10, "max_dead_tuples": -1}, ValueError),
    ({"max_xmin_age": 1.5, "max_dead_tuples": 0}, TypeError),
])
def test_bad_thresholds_are_refused(conn, kwargs, error):
    with pytest.raises(error):
        health.alerts(conn, **kwargs)


def test_bad_limits_and_a_schema_without_jobs(conn):
    with pytest.raises(ValueError):
        health.horizon_holders(conn, limit=0)
    with db.connect() as bare:
        bare.execute("SET search_path TO pg_catalog")
        with pytest.raises(LookupError):
            health.table_health(bare)
