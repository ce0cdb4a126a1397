"""queue.Worker(fair=True): its first claim serves both tenants; the cap holds."""

import threading

from cachequeue import db
from cachequeue.course.probes import plans
from cachequeue.queue import Worker

WAIT = 30


def _first_batch(schema, conn, **options):
    """Run a worker with two slots on a noisy (20 jobs) and a quiet (2 jobs) tenant; the
    tenants of the first two jobs its handlers started."""
    plans.fill_pending(conn, 20, tenant_id=1)
    plans.fill_pending(conn, 2, tenant_id=2)
    started, both, release = [], threading.Event(), threading.Event()
    lock = threading.Lock()

    def handler(payload, ctx):
        with lock:
            started.append(ctx.claim.tenant_id)
            if len(started) == 2:
                both.set()
        release.wait(WAIT)  # hold the slot until the test has looked
        return {}

    worker = Worker(lambda: db.connect(schema), {"noop": handler}, name="fair", concurrency=2,
                    poll=0.2, **options)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        assert both.wait(WAIT), "two handlers never started"
        with lock:
            return sorted(started[:2])
    finally:
        release.set()
        worker.stop()
        thread.join(WAIT)


def test_the_plain_worker_starts_with_the_noisy_tenant_only(conn, schema):
    assert _first_batch(schema, conn) == [1, 1]


def test_the_fair_worker_starts_one_job_of_each_tenant(conn, schema):
    assert _first_batch(schema, conn, fair=True, tenant_cap=1) == [1, 2]
    assert {row[0] for row in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'jobs'"
        " AND schemaname = current_schema()")} >= {"jobs_fair", "jobs_fair_running"}
