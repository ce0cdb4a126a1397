"""The queue's figures come from its tables, per tenant and kind, with bounded labels."""

from datetime import timedelta

from cachequeue import db
from cachequeue.course.probes import plans
from cachequeue.queue import jobs, metrics
from cachequeue.service import exporter


def _series(text: bytes, name: str) -> list[str]:
    return [line for line in text.decode().splitlines() if line.startswith(name + "{")]


def test_ten_thousand_tenants_do_not_make_ten_thousand_series(conn):
    plans.fill_pending(conn, 10_000, tenant_id=1, tenants=10_000)
    plans.fill_pending(conn, 50, tenant_id=7)  # the busiest tenant
    unbounded = metrics.snapshot(conn, top=None)
    assert len(unbounded["depth"]) == 10_000  # a DataFrame may hold them; a TSDB should not
    figures = metrics.snapshot(conn, top=20)
    tenants = [row["tenant"] for row in figures["depth"]]
    assert len(tenants) == 21 and "other" in tenants and "7" in tenants
    assert sum(row["pending"] for row in figures["depth"]) == 10_050  # nothing lost in folding
    text = exporter.exposition(figures)
    assert len(_series(text, "cq_jobs_pending")) == 21
    assert 'cq_jobs_pending{kind="noop",tenant="7"} 51.0' in text.decode()


def test_figures_follow_the_database_clock(conn):
    start = conn.execute("SELECT cq_now()").fetchone()[0]
    db.set_clock(conn, start)
    for n in range(4):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
    jobs.submit(conn, tenant_id=2, kind="flaky", payload={})
    db.set_clock(conn, start + timedelta(seconds=10))
    first, second = jobs.claim_many(conn, 2)
    db.set_clock(conn, start + timedelta(seconds=12))
    jobs.finish(conn, first, {})
    jobs.fail(conn, second, "TimeoutError: vendor")
    figures = metrics.snapshot(conn, window=60, top=None)
    by = {(f, r["tenant"], r["kind"]): r for f, rows in figures.items() for r in rows}
    assert by["depth", "1", "noop"]["pending"] == 2  # the retry waits for its backoff: not due
    assert by["oldest_wait", "1", "noop"]["seconds"] >= 12.0  # waiting since second 0
    assert by["claim_rate", "1", "noop"]["per_second"] == 2 / 60
    assert by["completion_rate", "1", "noop"]["per_second"] == 1 / 60
    assert by["duration", "1", "noop"]["p50"] == 2.0
    assert by["retry_ratio", "1", "noop"]["ratio"] == 0.5
    assert ("failure_ratio", "2", "flaky") not in by and by["failure_ratio", "1", "noop"]["ratio"] == 0


def test_counters_keep_their_labels_when_the_busiest_tenants_change(conn):
    """A tenant moving into or out of the top N must not carry its count into or out of
    "other": the counter figures use the fixed `counter_tenants`, the gauges the top N."""
    plans.fill_pending(conn, 2, tenant_id=1, tenants=2)      # tenants 1 and 2, one job each
    jobs.claim_many(conn, 2)                                  # ... both running
    plans.fill_pending(conn, 5, tenant_id=2)                  # tenant 2 is the busiest
    jobs.claim_many(conn, 5)

    def started(figures):
        return {row["tenant"]: n for row in figures["attempts"]
                for n in [row["attempts"]] if row["outcome"] is None}

    before = metrics.snapshot(conn, top=1, counter_tenants=[1])
    plans.fill_pending(conn, 9, tenant_id=1)                  # now tenant 1 is the busiest
    after = metrics.snapshot(conn, top=1, counter_tenants=[1])
    assert {row["tenant"] for row in before["depth"] + before["oldest_wait"]} <= {"2", "other"}
    assert {r["tenant"] for r in after["attempts"]} == {"1", "other"}
    assert started(before) == started(after) == {"1": 1, "other": 6}, \
        "no attempt began in between, so no counter may move"
