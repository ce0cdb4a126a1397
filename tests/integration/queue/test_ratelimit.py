"""A per-kind rate limit held in the database: every connection draws from one bucket."""

from datetime import timedelta

from cachequeue import db
from cachequeue.queue import jobs, ratelimit


def test_two_workers_share_one_bucket(conn, schema):
    ratelimit.install(conn)
    ratelimit.set_limit(conn, "summarise", per_second=2, burst=2)
    for n in range(100):
        jobs.submit(conn, tenant_id=1, kind="summarise", payload={"n": n})
    start = conn.execute("SELECT cq_now()").fetchone()[0]
    with db.connect(schema) as other:
        started = []
        for tick in range(11):  # ten seconds, two workers asking for 5 jobs each, every second
            for c in (conn, other):
                db.set_clock(c, start + timedelta(seconds=tick))
                started += [tick] * len(ratelimit.claim_limited(c, "summarise", 5))
    # The burst, then two per second, across both workers; without the bucket they would
    # have started 10 per second (110 in all, more than the 100 queued).
    assert len(started) == 2 + 2 * 10
    assert [started.count(t) for t in range(11)] == [2] * 11
    assert ratelimit.take(conn, "noop", 7) == 7  # a kind without a bucket is not limited
