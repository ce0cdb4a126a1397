"""The claim is served by the partial indexes, however many finished jobs pile up."""

import json

import pytest

from cachequeue import jobs


def _plan_nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def _claim_plan(conn, limit):
    params = {"limit": limit, "lease": 30.0, "kinds": None, "worker": "w"}
    # EXPLAIN without ANALYZE plans the data-modifying statement without running it.
    rows = conn.execute("EXPLAIN (FORMAT JSON) " + jobs._QUERIES["claim"].sql, params).fetchone()
    plan = rows[0] if not isinstance(rows[0], str) else json.loads(rows[0])
    return list(_plan_nodes(plan[0]["Plan"]))


@pytest.mark.parametrize("analyze", [True, False], ids=["analyzed", "fresh-statistics"])
def test_claim_uses_the_partial_indexes_with_100k_finished_jobs(conn, analyze):
    conn.execute(
        "INSERT INTO jobs (tenant_id, kind, payload, state, attempts, finished_at)"
        " SELECT n % 10, 'noop', '{}', 'done', 1, cq_now() FROM generate_series(1, 100000) n")
    for n in range(3):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
    if analyze:
        conn.execute("ANALYZE jobs")  # what autovacuum does shortly after such a load
    for limit in (1, 10):
        nodes = _claim_plan(conn, limit)
        scans = {(n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes
                 if "Scan" in n["Node Type"]}
        assert not any(kind == "Seq Scan" and rel == "jobs" for kind, rel, _ in scans), scans
        used = {index for _, rel, index in scans if rel == "jobs"}
        assert {"jobs_runnable", "jobs_lease_expiry"} <= used, scans
    # And the statement really returns the runnable jobs, not the finished ones.
    assert [c.payload["n"] for c in jobs.claim_many(conn, 10)] == [0, 1, 2]


def test_the_claim_keeps_one_cached_plan_on_a_large_backlog(conn):
    # With 50,000 pending jobs a plan that depended on the limit would be re-planned on
    # every call (custom plans); ours is the same for any limit, so the server caches it.
    conn.execute("INSERT INTO jobs (tenant_id, kind, payload)"
                 " SELECT 1, 'noop', '{}' FROM generate_series(1, 50000)")
    conn.execute("ANALYZE jobs")
    for _ in range(15):  # psycopg prepares after 5 runs; the server compares 5 custom plans
        assert jobs.claim(conn) is not None
    [(generic, custom)] = conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
        " WHERE statement LIKE '%%fresh AS (%%'").fetchall()
    assert generic >= 5 and custom <= 5, (generic, custom)
