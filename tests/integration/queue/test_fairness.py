"""The fair claim: a noisy tenant does not starve a quiet one; its plan reads indexes only."""

from datetime import timedelta

import pytest

from cachequeue import db
from cachequeue.course.probes import plans
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


def _running(conn, tenant_id):
    """(running, live leases) of a tenant, read from the jobs table."""
    return conn.execute("SELECT count(*), count(*) FILTER (WHERE locked_until > cq_now())"
                        " FROM jobs WHERE state = 'running' AND tenant_id = %s",
                        (tenant_id,)).fetchone()


def _plain_claims_that_expire(conn, leases):
    """Tenant 1 runs one job per lease in `leases`, taken by plain claims (no cap), and six
    seconds pass: the leases shorter than that have expired."""
    fairness.install(conn)
    plans.fill_pending(conn, 6, tenant_id=1)
    start = conn.execute("SELECT cq_now()").fetchone()[0]
    db.set_clock(conn, start)
    held = [jobs.claim(conn, lease=lease) for lease in leases]
    db.set_clock(conn, start + timedelta(seconds=6))
    return held


def test_the_expired_lease_branch_respects_the_cap(conn):
    held = _plain_claims_that_expire(conn, [5, 5, 5, 5])
    assert _running(conn, 1) == (4, 0)  # over the cap of 2, every lease expired
    taken = fairness.claim_fair(conn, 10, tenant_cap=2)
    assert [(c.job_id, c.attempt) for c in taken] == [(h.job_id, 2) for h in held[:2]]
    assert _running(conn, 1) == (4, 2)  # two taken over, no fresh job: two live leases
    assert fairness.claim_fair(conn, 10, tenant_cap=2) == []
    # Without a cap the other two expired leases are taken over first, then a fresh job.
    assert [c.attempt for c in fairness.claim_fair(conn, 3)] == [2, 2, 1]


def test_takeovers_count_the_live_leases_of_the_tenant(conn):
    held = _plain_claims_that_expire(conn, [60, 5, 5])
    assert _running(conn, 1) == (3, 1)
    taken = fairness.claim_fair(conn, 10, tenant_cap=2)
    assert [(c.job_id, c.attempt) for c in taken] == [(held[1].job_id, 2)]  # 1 live + 1 = cap
    assert _running(conn, 1) == (3, 2)


@pytest.mark.parametrize("analyze", [True, False], ids=["analyzed", "fresh-statistics"])
def test_fair_claim_reads_only_indexes(conn, analyze):
    fairness.install(conn)
    plans.fill_finished(conn, 100_000)
    _fill(conn, noisy=1_000, quiet=10)
    if analyze:
        plans.analyze(conn)
    for cap, tenants in ((None, None), (2, None), (2, [1, 2])):
        params = {"limit": 4, "kinds": None, "tenant_cap": cap, "tenants": tenants}
        doc = plans.explain(conn, fairness.query("fair_choice").sql, params)
        assert plans.seq_scans(doc) == 0, plans.scans(doc)
        assert {"jobs_fair", "jobs_fair_running", "jobs_lease_expiry"} <= plans.indexes(doc), \
            plans.scans(doc)
    # The claim statement that takes the chosen jobs reads them by primary key.
    params = {"limit": 4, "lease": 30.0, "kinds": None, "worker": "w", "chosen": [1, 2, 3]}
    doc = plans.explain(conn, jobs.query("claim").sql, params)
    assert plans.seq_scans(doc) == 0, plans.scans(doc)
    assert "jobs_pkey" in plans.explain(conn, jobs.query("claim").sql, params, fmt="text")


def test_choose_is_the_claims_first_choice_and_changes_nothing(conn):
    fairness.install(conn)
    _fill(conn, noisy=20, quiet=3)
    chosen = fairness.choose(conn, 4, tenant_cap=2)
    assert fairness.choose(conn, 4, tenant_cap=2) == chosen  # it claimed nothing
    assert sorted(tenant for _, tenant in chosen) == [1, 1, 2, 2]  # two each: the cap
    claims = fairness.claim_fair(conn, 4, tenant_cap=2)
    assert sorted(c.job_id for c in claims) == sorted(job_id for job_id, _ in chosen)
    assert fairness.choose(conn, 4, tenant_cap=2) == []  # both tenants are at the cap now
    with pytest.raises(ValueError, match="limit"):
        fairness.choose(conn, 0)
