"""The fair claim: a noisy tenant does not starve a quiet one; its plan reads indexes only."""

from datetime import timedelta

import pytest

from cachequeue import db
from cachequeue.course import plans
from cachequeue.queue import fairness, jobs


def _fill(conn, noisy=10_000, quiet=10):
    plans.fill_pending(conn, noisy, tenant_id=1)  # queued first: older run_after
    plans.fill_pending(conn, quiet, tenant_id=2)


def _served(conn, claim, rounds, batch=4):
    """Claim `batch` jobs per round, finishing them before the next: tenants in claim order."""
    order = []
    for _ in range(rounds):
        claims = claim(conn, batch)
        order += [c.tenant_id for c in claims]
        jobs.finish_many(conn, [(c, {}) for c in claims])
    return order


def test_plain_claim_starves_the_quiet_tenant(conn):
    _fill(conn)
    order = _served(conn, lambda c, n: jobs.claim_many(c, n), rounds=5)
    assert order == [1] * 20  # the quiet tenant's 10 jobs wait behind 10,000


def test_fair_claim_serves_the_quiet_tenant_at_once(conn):
    fairness.install(conn)
    _fill(conn)
    order = _served(conn, lambda c, n: fairness.claim_fair(c, n), rounds=5)
    # Each batch of 4 takes two of each tenant until the quiet tenant's 10 are done.
    assert order[:4].count(2) == 2
    assert order[:20].count(2) == 10 and order[:20].count(1) == 10


def test_tenant_cap_bounds_running_jobs(conn):
    fairness.install(conn)
    _fill(conn, noisy=50, quiet=0)
    held = fairness.claim_fair(conn, 10, tenant_cap=3)
    assert len(held) == 3
    assert fairness.claim_fair(conn, 10, tenant_cap=3) == []  # still three running
    jobs.finish(conn, held[0], {})
    assert len(fairness.claim_fair(conn, 10, tenant_cap=3)) == 1


def test_fair_claim_takes_expired_leases_first(conn):
    fairness.install(conn)
    jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": 0})
    first = fairness.claim_fair(conn, 1, lease=5)[0]
    jobs.submit(conn, tenant_id=2, kind="noop", payload={"n": 1})
    db.set_clock(conn, first.locked_until + timedelta(seconds=1))
    again = fairness.claim_fair(conn, 1, lease=5)[0]
    assert (again.job_id, again.attempt) == (first.job_id, 2)
    assert not jobs.finish(conn, first, {})  # the old holder's token is refused


@pytest.mark.parametrize("analyze", [True, False], ids=["analyzed", "fresh-statistics"])
def test_fair_claim_reads_only_indexes(conn, analyze):
    fairness.install(conn)
    plans.fill_finished(conn, 100_000)
    _fill(conn, noisy=1_000, quiet=10)
    if analyze:
        plans.analyze(conn)
    for cap in (None, 2):
        params = {"limit": 4, "lease": 30.0, "kinds": None, "worker": "w", "tenant_cap": cap}
        doc = plans.explain(conn, fairness.query().sql, params)
        assert plans.seq_scans(doc) == 0, plans.scans(doc)
        assert {"jobs_fair", "jobs_fair_running", "jobs_lease_expiry"} <= plans.indexes(doc), \
            plans.scans(doc)
