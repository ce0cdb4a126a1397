"""The claim is served by the partial indexes, however many finished jobs pile up."""

import pytest

from cachequeue.course.probes import plans
from cachequeue.queue import jobs


def _claim_plan(conn, limit):
    params = {"limit": limit, "lease": 30.0, "kinds": None, "worker": "w", "chosen": None}
    # EXPLAIN without ANALYZE plans the data-modifying statement without running it.
    return plans.explain(conn, jobs.query("claim").sql, params)


@pytest.mark.parametrize("analyze", [True, False], ids=["analyzed", "fresh-statistics"])
def test_claim_uses_the_partial_indexes_with_100k_finished_jobs(conn, analyze):
    plans.fill_finished(conn, 100_000)
    for n in range(3):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
    if analyze:
        plans.analyze(conn)  # what autovacuum does shortly after such a load
    for limit in (1, 10):
        doc = _claim_plan(conn, limit)
        assert plans.seq_scans(doc) == 0, plans.scans(doc)
        assert {"jobs_runnable", "jobs_lease_expiry"} <= plans.indexes(doc), plans.scans(doc)
    # And the statement really returns the runnable jobs, not the finished ones.
    assert [c.payload["n"] for c in jobs.claim_many(conn, 10)] == [0, 1, 2]


def test_explain_analyze_runs_the_claim_but_changes_nothing(conn):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    params = {"limit": 1, "lease": 30.0, "kinds": None, "worker": "w", "chosen": None}
    doc = plans.explain(conn, jobs.query("claim").sql, params, analyze=True)
    assert doc[0]["Execution Time"] >= 0
    text = plans.explain(conn, jobs.query("claim").sql, params, costs=False, fmt="text")
    assert "cost=" not in text and "jobs_runnable" in text
    assert jobs.claim(conn) is not None  # the analyzed claim was rolled back


def test_the_claim_keeps_one_cached_plan_on_a_large_backlog(conn):
    # With 50,000 pending jobs a plan that depended on the limit would be re-planned on
    # every call (custom plans); ours is the same for any limit, so the server caches it.
    plans.fill_pending(conn, 50_000)
    plans.analyze(conn)
    for _ in range(15):  # psycopg prepares after 5 runs; the server compares 5 custom plans
        assert jobs.claim(conn) is not None
    [(generic, custom)] = conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
        " WHERE statement LIKE '%%fresh AS (%%'").fetchall()
    assert generic >= 5 and custom <= 5, (generic, custom)
