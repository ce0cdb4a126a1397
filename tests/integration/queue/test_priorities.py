"""Priorities with aging: higher first, a low priority never starved, served by jobs_runnable."""

import pytest
from frozen import at

from cachequeue.course.probes import plans
from cachequeue.queue import fairness, jobs


def _count(conn):
    return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]


def test_higher_priority_is_claimed_first_and_equal_priorities_keep_their_order(conn):
    at(conn, 0)
    low = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n}) for n in range(3)]
    high = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, priority=50)
    assert [jobs.claim(conn).job_id for _ in range(4)] == [high, *low]


def test_a_flood_of_high_priorities_delays_a_low_one_by_the_stated_bound_only(conn):
    """One worker claims one job a second; a priority-100 job arrives every second. Without
    aging the low job would wait for ever; with it, only the high jobs that became due less
    than 100 s (MAX_PRIORITY * PRIORITY_AGING) after it go first."""
    bound = jobs.MAX_PRIORITY * jobs.PRIORITY_AGING
    at(conn, 0)
    low = jobs.submit(conn, tenant_id=1, kind="noop", payload={"role": "low"})
    overtook = []
    for second in range(1, 301):
        at(conn, second)
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"due": second},
                    priority=jobs.MAX_PRIORITY)
        got = jobs.claim(conn)
        if got.job_id == low:
            break
        assert jobs.finish(conn, got, None)
        overtook.append(got.payload["due"])
    else:
        pytest.fail("the low-priority job was starved for 300 s")
    # Priority worked: every job claimed before it was a high one...
    assert overtook == list(range(1, len(overtook) + 1)) and len(overtook) > 0
    # ...and aging bounded it: each became due less than `bound` seconds after the low job,
    # and every one that did (its rank tied the low job's at 100 s: the lower id goes first).
    assert max(overtook) < bound and len(overtook) == int(bound) - 1
    assert second == bound  # claimed at 100 s, the flood still arriving


@pytest.mark.parametrize("value", [-1, jobs.MAX_PRIORITY + 1, 10**9, True, 1.5, "5", None])
def test_a_bad_priority_is_refused_and_nothing_is_written(conn, value):
    with pytest.raises((TypeError, ValueError), match="priority"):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={}, priority=value)
    assert _count(conn) == 0


def test_the_claim_reads_jobs_runnable_with_priorities_mixed_in(conn):
    plans.fill_finished(conn, 50_000)
    at(conn, 0)
    for n in range(30):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n}, priority=n % 4 * 10,
                    run_after=n % 3 * 10)
    plans.analyze(conn)
    params = {"limit": 5, "lease": 30.0, "kinds": None, "worker": "w", "chosen": None}
    doc = plans.explain(conn, jobs.query("claim").sql, params)
    assert plans.seq_scans(doc) == 0, plans.scans(doc)
    assert "jobs_runnable" in plans.indexes(doc), plans.scans(doc)
    text = plans.explain(conn, jobs.query("claim").sql, params, costs=False, fmt="text")
    assert "Index Cond: (job_rank(run_after, priority) <=" in text, text


def test_claim_many_takes_the_best_ranked_jobs_and_skips_those_not_due(conn):
    at(conn, 0)
    ids = {p: jobs.submit(conn, tenant_id=1, kind="noop", payload={}, priority=p)
           for p in (0, 10, 20, 30)}
    later = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, priority=100, run_after=50)
    # Due in 50 s with a 100 s head start: its rank is before now, but it is not due yet.
    taken = {c.job_id for c in jobs.claim_many(conn, 3, lease=600)}
    assert taken == {ids[10], ids[20], ids[30]}
    assert jobs.claim(conn, lease=600).job_id == ids[0] and jobs.claim(conn) is None
    at(conn, 50)
    assert jobs.claim(conn).job_id == later


def test_the_fair_claim_orders_each_tenants_jobs_by_priority(conn):
    fairness.install(conn)
    at(conn, 0)
    a_low = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    a_high = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, priority=20)
    b_low = jobs.submit(conn, tenant_id=2, kind="noop", payload={})
    # One job per tenant first (fairness), each tenant's best-ranked one.
    assert {c.job_id for c in fairness.claim_fair(conn, 2)} == {a_high, b_low}
    assert [c.job_id for c in fairness.claim_fair(conn, 2)] == [a_low]
    doc = plans.explain(conn, fairness.query("fair_choice").sql,
                        {"limit": 2, "kinds": None, "tenant_cap": None, "tenants": None})
    assert "jobs_fair" in plans.indexes(doc), plans.scans(doc)
