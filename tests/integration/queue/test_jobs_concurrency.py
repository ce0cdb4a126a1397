"""Several threads and several processes claim the same jobs: every job is claimed exactly once."""

import multiprocessing
import threading
from collections import Counter

from cachequeue import db
from cachequeue.queue import jobs

N_JOBS = 200


def _submit_all(schema, n=N_JOBS):
    with db.connect(schema) as conn:
        conn.execute(
            "INSERT INTO jobs (tenant_id, kind, payload)"
            " SELECT 1, 'noop', jsonb_build_object('n', n) FROM generate_series(1, %s) n", [n])
        return {r[0] for r in conn.execute("SELECT id FROM jobs")}


def _drain(schema, worker, batch, start):
    """Claim (and finish) until nothing is claimable; return the job ids this worker got."""
    got = []
    with db.connect(schema) as conn:
        start.wait(timeout=30)
        while True:
            claims = (jobs.claim_many(conn, batch, worker=worker) if batch > 1
                      else [c for c in [jobs.claim(conn, worker=worker)] if c])
            if not claims:
                return got
            for claim in claims:
                got.append(claim.job_id)
                assert jobs.finish(conn, claim, {"by": worker})


def _process_main(schema, worker, batch, start, out):
    out.put((worker, _drain(schema, worker, batch, start)))


def _assert_each_job_once(schema, all_ids, per_worker):
    claimed = [job_id for ids in per_worker.values() for job_id in ids]
    duplicates = [job_id for job_id, n in Counter(claimed).items() if n > 1]
    assert duplicates == []
    assert set(claimed) == all_ids
    with db.connect(schema) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM jobs WHERE state = 'done'),"
            " (SELECT count(*) FROM job_results),"
            " (SELECT count(*) FROM job_attempts),"
            " (SELECT max(attempts) FROM jobs)").fetchone()
        assert row == (len(all_ids), len(all_ids), len(all_ids), 1)
        # Each result names the worker whose claim returned the job.
        owners = dict(conn.execute("SELECT job_id, output->>'by' FROM job_results").fetchall())
    assert all(owners[j] == w for w, ids in per_worker.items() for j in ids)


def test_threads_never_double_claim(schema):
    all_ids = _submit_all(schema)
    start = threading.Barrier(6)
    per_worker = {}

    def run(name, batch):
        per_worker[name] = _drain(schema, name, batch, start)

    threads = [threading.Thread(target=run, args=(f"t{i}", 1 + (i % 3) * 2)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(per_worker) == 6, "a worker thread failed"
    _assert_each_job_once(schema, all_ids, per_worker)


def test_processes_never_double_claim(schema):
    all_ids = _submit_all(schema)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_process_main, args=(schema, f"p{i}", 1 if i < 2 else 10, start, out))
             for i in range(4)]
    for p in procs:
        p.start()
    per_worker = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    _assert_each_job_once(schema, all_ids, per_worker)
    # All four took part (the barrier released them together).
    assert len(per_worker) == 4
