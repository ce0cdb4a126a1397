"""course.perf against a real PostgreSQL: commit timing, drains, claim cost, the bench probes."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest

from cachequeue import db
from cachequeue.course.labs import perf
from cachequeue.course.probes import plans
from cachequeue.queue import jobs


def test_commit_times_counts_one_commit_per_insert_and_restores_the_setting(conn):
    on = perf.commit_times(conn, 20)
    off = perf.commit_times(conn, 20, synchronous=False)
    assert len(on) == len(off) == 20 and min(on + off) > 0
    assert conn.execute("SELECT count(*) FROM perf_commits").fetchone()[0] == 40
    assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"


def test_commit_times_needs_autocommit(schema):
    with psycopg.connect(db.database_url(), options=f"-c search_path={schema}") as plain, \
            pytest.raises(ValueError, match="autocommit"):
        perf.commit_times(plain, 1)


@pytest.mark.parametrize("batch", [1, 7])
def test_drain_rate_finishes_every_job(conn, batch):
    plans.fill_pending(conn, 3)  # already waiting: drained and counted as well
    rate = perf.drain_rate(conn, 30, batch=batch, progress=False)
    assert rate > 0
    states = dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
    assert states == {"done": 33}


def test_claim_cost_reads_the_plan_and_changes_nothing(conn):
    plans.fill_pending(conn, 5)
    plans.fill_finished(conn, 2000)
    plans.analyze(conn, vacuum=True)
    cost = perf.claim_cost(conn)
    assert cost["buffers"] > 0 and cost["execution_ms"] >= 0
    assert any("jobs_runnable" in scan for scan in cost["scans"])
    assert conn.execute("SELECT count(*) FROM jobs WHERE state = 'pending'").fetchone()[0] == 5


def test_waiting_on_sees_a_claim_blocked_by_a_table_lock(schema):
    name = f"perf-test-{uuid.uuid4().hex[:8]}"
    url = db.database_url()
    with db.connect(schema) as gate, db.connect(schema) as watch:
        plans.fill_pending(gate, 1)
        gate.execute("BEGIN")
        gate.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
        claimed = []

        def claim():
            with psycopg.connect(url, autocommit=True, application_name=name,
                                 options=f"-c search_path={schema}") as blocked:
                claimed.append(jobs.claim(blocked))

        thread = threading.Thread(target=claim)
        thread.start()
        try:
            for _ in range(400):
                if perf.waiting_on(watch, [name, "someone-else"]) == {name}:
                    break
                threading.Event().wait(0.025)
            assert perf.waiting_on(watch, [name]) == {name}
        finally:
            gate.execute("COMMIT")
            thread.join(10)
        assert claimed and claimed[0] is not None
        assert perf.waiting_on(watch, [name]) == set()


def test_transactions_counts_what_a_finished_backend_ran(schema):
    url = db.database_url()
    name = f"perf-test-{uuid.uuid4().hex[:8]}"
    before = perf.transactions(url)
    with psycopg.connect(url, autocommit=True, application_name=name) as other:
        for _ in range(5):
            other.execute("SELECT 1")
    perf.wait_gone(url, name)
    assert perf.transactions(url) - before >= 5


def test_machine_facts_name_the_server(conn):
    facts = perf.machine(conn, "postgresql://u:pw@127.0.0.1:5432/x")
    assert facts["cpus"] >= 1 and facts["server"] == "127.0.0.1:5432/x"
    assert facts["postgresql"]["fsync"] in ("on", "off")


def test_throughput_mode_counts_its_statements_from_the_rows(conn, schema):
    r = perf.throughput_mode(lambda: db.connect(schema), 200, prefetch=20, batch=20)
    assert r["done"] == r["attempts"] == 200
    assert r["largest_claim"] <= r["concurrency"] + 20 and r["largest_completion"] <= 20
    assert r["claims"] <= 200 // 10 and r["completions"] >= 200 // 20
    assert r["commits_per_job"] == (r["claims"] + r["completions"]) / 200 and r["rate"] > 0


@pytest.mark.parametrize("kwargs, error", [
    ({"count": 0, "prefetch": 1, "batch": 1}, ValueError),
    ({"count": 10, "prefetch": -1, "batch": 1}, ValueError),
    ({"count": 10, "prefetch": 1, "batch": 0}, ValueError),
    ({"count": "10", "prefetch": 1, "batch": 1}, TypeError),
])
def test_throughput_mode_refuses_bad_arguments(schema, kwargs, error):
    with pytest.raises(error):
        perf.throughput_mode(lambda: db.connect(schema), **kwargs)


def test_the_lab_runs_refuse_a_schema_with_jobs_pending_and_write_nothing(conn, schema):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with pytest.raises(ValueError, match="pending or running"):
        perf.throughput_mode(lambda: db.connect(schema), 10, prefetch=2, batch=2)
    with pytest.raises(ValueError, match="pending or running"):
        perf.fence_cost(conn, 10)
    with pytest.raises(ValueError, match="pending or running"):
        perf.stop_with_local_queue(lambda: db.connect(schema), 3, prefetch=2)
    with pytest.raises(ValueError, match="pending or running"):
        perf.generic_plan(conn, 10)
    assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 1


def test_fence_cost_refuses_the_taken_over_row_and_leaves_nothing_running(conn):
    r = perf.fence_cost(conn, 20)
    assert r["refused"] == [r["taken_over"]] and r["accepted"] == 19
    assert all(len(runs) == 3 for runs in r["runs"].values())
    assert conn.execute("SELECT count(*) FROM jobs WHERE state <> 'done'").fetchone()[0] == 0


def test_the_generic_plan_of_the_array_form_compares_every_pair(conn):
    perf.generic_plan(conn, 300)  # a queue with history: finished jobs, none running
    r = perf.generic_plan(conn, 300)
    arrays, texts = r["arrays"], r["texts"]
    assert arrays["custom"]["batch_estimate"] == texts["custom"]["batch_estimate"] == 300
    assert arrays["generic"]["batch_estimate"] == 10 and texts["generic"]["batch_estimate"] == 100
    assert arrays["custom"]["join"] == "Hash Join" and arrays["custom"]["compared"] == 300
    assert arrays["generic"]["join"] == "Nested Loop" and arrays["generic"]["compared"] == 300 * 300
    assert arrays["auto"] == {"custom_plans": 5, "generic_plans": perf.AUTO_RUNS - 5}
    assert conn.execute("SELECT count(*) FROM jobs WHERE state <> 'done'").fetchone()[0] == 0
    assert conn.execute(  # nothing left prepared on the caller's connection
        "SELECT count(*) FROM pg_prepared_statements WHERE name = 'generic_finish_many'"
    ).fetchone()[0] == 0


def test_a_graceful_stop_hands_the_local_queue_back_at_once(schema):
    r = perf.stop_with_local_queue(lambda: db.connect(schema), 4, prefetch=3)
    assert r["first_turn"]["claimed"] == 4
    assert r["stop_turn"] == {"statements": 1, "released": 3}
    assert [j["state"] for j in r["at_end"]] == ["done", "pending", "pending", "pending"]
