"""Queue throughput: no-op jobs drained by 1, 4 and 8 worker processes; ours beside our statements without the library, procrastinate and pgqueuer.

Usage: .venv/bin/python bench/queue_throughput.py [--jobs 5000] [--reps 3] [--workers 1,4,8]

For every (repetition, worker count, system) the script builds a fresh schema, submits
`--jobs` no-op jobs in bulk (not timed), starts N worker processes that each open their own
connection and wait at a barrier, releases them together, and times until the last one has
returned with nothing left to claim. Systems, each driven through its own documented API:

  our_statements_b1/b10
                   psycopg loop running OUR claim and finish statements (sql/queries.sql),
                   without the library around them (no validation, no dataclasses); named
                   so because it is not a "bare SQL" queue of someone else's design: it
                   measures what the library's Python adds to our own statements
  minimal_b1/b10   psycopg loop with the smallest possible claim/finish (no attempt history, no
                   result row; the claim commits asynchronously like ours): what the
                   history and results cost, for context
  ours_b1          jobs.claim + jobs.finish;   ours_b10: jobs.claim_many(10) + jobs.finish
  *_b10_fm         the same ten claims finished by ONE finish_many statement (one commit)
  procrastinate    App.run_worker_async(wait=False, concurrency=1), an async no-op task
  pgqueuer_b1/b10  QueueManager.run(mode=drain, batch_size=1|10), an async no-op entrypoint

Repetitions are interleaved (the system order rotates each time) and medians reported.
Prints one JSON document on stdout: rates in jobs/s, ratios for the targets of issue 4.
Only the local server is used (embedded Unix socket, or a DATABASE_URL on loopback).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing as mp
import platform
import statistics
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from cachequeue import db, sqlfile
from cachequeue.course import chapter
from cachequeue.queue import jobs

SYSTEMS = ["our_statements_b1", "our_statements_b10", "our_statements_b10_fm",
           "minimal_b1", "minimal_b10",
           "ours_b1", "ours_b10", "ours_b10_fm", "procrastinate", "pgqueuer_b1", "pgqueuer_b10"]
SCHEMA = {"procrastinate": "bench_procrastinate", "pgqueuer": "bench_pgqueuer"}
OURS = {name: jobs.query(name) for name in ("claim", "finish", "finish_many")}
HERE = sqlfile.parse(Path(__file__).with_suffix(".sql").read_text(encoding="utf-8"),
                     "bench/queue_throughput.sql")
MINIMAL_CLAIM = HERE["minimal_claim"].sql
MINIMAL_FINISH = HERE["minimal_finish"].sql


def family(system: str) -> str:
    return system.split("_b")[0] if system.startswith(("pgqueuer", "procrastinate")) else "cq"


def batch_of(system: str) -> int:
    return int(system.split("_b")[1].split("_")[0]) if "_b" in system else 1


def many(system: str) -> bool:
    """Whether the loop finishes each claimed batch with one finish_many statement."""
    return system.endswith("_fm")


def schema_of(system: str) -> str:
    return SCHEMA.get(family(system), "bench_cq")


def options(schema: str) -> str:
    return f"-c search_path={schema}"


# ------------------------------------------------------------------ workers (child processes)


def _work_sql(url, schema, system, batch, wid, barrier):
    minimal = system.startswith("minimal")
    claim_sql = MINIMAL_CLAIM if minimal else OURS["claim"].sql
    finish_sql = MINIMAL_FINISH if minimal else OURS["finish"].sql
    params = {"limit": batch, "lease": 30.0, "kinds": None, "worker": f"w{wid}"}
    done = 0
    with psycopg.connect(url, autocommit=True, options=options(schema)) as conn:
        barrier.wait()
        while rows := conn.execute(claim_sql, params).fetchall():
            if many(system):
                conn.execute(OURS["finish_many"].sql, {
                    "job_ids": [r[0] for r in rows], "lease_tokens": [r[5] for r in rows],
                    "outputs": ["null"] * len(rows), "schema": schema})
                done += len(rows)
                continue
            for row in rows:
                conn.execute(finish_sql, {"job_id": row[0], "lease_token": row[1 if minimal else 5],
                                          "schema": schema, "output": "null"})
                done += 1
    return done


def _work_ours(url, schema, system, batch, wid, barrier):
    done = 0
    with db.connect(schema) as conn:
        barrier.wait()
        if batch == 1:
            while (claim := jobs.claim(conn, worker=f"w{wid}")) is not None:
                jobs.finish(conn, claim, None)
                done += 1
        elif many(system):
            while claims := jobs.claim_many(conn, batch, worker=f"w{wid}"):
                done += sum(jobs.finish_many(conn, [(claim, None) for claim in claims]))
        else:
            while claims := jobs.claim_many(conn, batch, worker=f"w{wid}"):
                for claim in claims:
                    jobs.finish(conn, claim, None)
                    done += 1
    return done


def _procrastinate_app(url, schema):
    import procrastinate

    # Its warning about an App defined in __main__ concerns the CLI's import paths; the
    # workers here register the task in-process, so the warning does not apply.
    logging.getLogger("procrastinate").setLevel(logging.ERROR)

    connector = procrastinate.PsycopgConnector(conninfo=url, kwargs={"options": options(schema)},
                                               min_size=1, max_size=2)
    return procrastinate.App(connector=connector)


def _work_procrastinate(url, schema, system, batch, wid, barrier):
    app, done = _procrastinate_app(url, schema), [0]

    @app.task(name="noop")
    async def noop():
        done[0] += 1

    async def main():
        async with app.open_async():
            barrier.wait()
            await app.run_worker_async(wait=False, concurrency=1, listen_notify=False,
                                       install_signal_handlers=False, name=f"w{wid}")

    asyncio.run(main())
    return done[0]


def _work_pgqueuer(url, schema, system, batch, wid, barrier):
    from pgqueuer import PsycopgDriver, Queries, QueueManager
    from pgqueuer.domain.types import QueueExecutionMode

    done = [0]

    async def main():
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, options=options(schema))
        try:
            qm = QueueManager(Queries(PsycopgDriver(conn)))

            @qm.entrypoint("noop")
            async def noop(job):
                done[0] += 1

            barrier.wait()
            await qm.run(batch_size=batch, mode=QueueExecutionMode.drain,
                         dequeue_timeout=timedelta(seconds=1))
        finally:
            await conn.close()

    asyncio.run(main())
    return done[0]


WORKERS = {"cq": _work_sql, "procrastinate": _work_procrastinate, "pgqueuer": _work_pgqueuer}


def _child(url, system, wid, barrier, out):
    try:
        fn = _work_ours if system.startswith("ours") else WORKERS[family(system)]
        done = fn(url, schema_of(system), system, batch_of(system), wid, barrier)
        out.put((wid, done, time.monotonic(), None))
    except BaseException:  # reported to the parent, which fails the run loudly
        barrier.abort()
        out.put((wid, 0, time.monotonic(), traceback.format_exc()))


# ------------------------------------------------------------------ set-up and checks (parent)


def _fresh(url, schema):
    with psycopg.connect(url, autocommit=True) as conn:
        db.drop_schema(conn, schema)
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))


def setup(url, system, n):
    """Fresh schema with n pending no-op jobs; returns the seconds the bulk submit took."""
    schema = schema_of(system)
    if family(system) == "cq":
        with db.connect() as conn:
            chapter.reset(conn, schema)
            t0 = time.perf_counter()
            conn.execute(HERE["fill_cq"].sql, {"n": n})
            took = time.perf_counter() - t0
            conn.execute(HERE["analyze"].sql)
        return took
    _fresh(url, schema)
    if family(system) == "procrastinate":
        app = _procrastinate_app(url, schema)
        noop = app.task(name="noop")(lambda: None)

        async def main():
            async with app.open_async():
                await app.schema_manager.apply_schema_async()
                t0 = time.perf_counter()
                await noop.batch_defer_async(*[{} for _ in range(n)])
                return time.perf_counter() - t0
    else:
        from pgqueuer import PsycopgDriver, Queries

        async def main():
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                         options=options(schema))
            try:
                queries = Queries(PsycopgDriver(conn))
                await queries.install()
                t0 = time.perf_counter()
                await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
                return time.perf_counter() - t0
            finally:
                await conn.close()
    took = asyncio.run(main())
    with psycopg.connect(url, autocommit=True, options=options(schema)) as conn:
        conn.execute(HERE["analyze"].sql)
    return took


CHECKS = {f: HERE[f"check_{f}"].sql for f in ("cq", "procrastinate", "pgqueuer")}


def run_one(url, system, workers, n, timeout):
    """One drain. `seconds`: from the release of the workers (database clock) to the last
    completion the database recorded; `wall_seconds`: until every worker process returned
    (includes each library's own shutdown, e.g. pgqueuer's buffer flush timers)."""
    submit_s = setup(url, system, n)
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(workers + 1), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(url, system, w, barrier, out), daemon=True)
             for w in range(workers)]
    with psycopg.connect(url, autocommit=True, options=options(schema_of(system))) as conn:
        for p in procs:
            p.start()
        barrier.wait(timeout=60)
        t0 = time.monotonic()
        start_at = conn.execute(HERE["clock"].sql).fetchone()[0]
        reports = [out.get(timeout=timeout) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        errors = [r[3] for r in reports if r[3]]
        if errors:
            raise RuntimeError(f"{system} with {workers} workers failed:\n{errors[0]}")
        remaining, end_at = conn.execute(CHECKS[family(system)]).fetchone()
    wall = max(r[2] for r in reports) - t0
    processed, elapsed = sum(r[1] for r in reports), (end_at - start_at).total_seconds()
    if processed != n or remaining:
        raise RuntimeError(f"{system}: processed {processed} of {n}, {remaining} left over")
    return {"system": system, "workers": workers, "seconds": round(elapsed, 4),
            "rate": round(n / elapsed, 1), "wall_seconds": round(wall, 4),
            "wall_rate": round(n / wall, 1), "submit_seconds": round(submit_s, 4)}


# ------------------------------------------------------------------ main


def _check_local(url):
    host = conninfo_to_dict(url).get("host") or ""
    if not all(h.startswith("/") or h in ("localhost", "127.0.0.1", "::1")
               for h in host.split(",") if h):
        raise SystemExit(f"refusing to benchmark a non-local server ({host!r})")


def ratio(a, b):
    return round(a / b, 3) if a and b else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000, help="no-op jobs per run")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--workers", default="1,4,8", help="worker process counts")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--max-seconds", type=float, default=1200,
                        help="stop starting new repetitions after this long")
    args = parser.parse_args(argv)
    db.database_url(start=True)  # set-up: start the embedded server unless DATABASE_URL is set
    workers = [int(w) for w in args.workers.split(",")]
    systems = [s for s in args.systems.split(",") if s]
    if args.jobs < 1 or args.reps < 1 or min(workers) < 1 or set(systems) - set(SYSTEMS):
        parser.error(f"need jobs, reps, workers >= 1 and systems among {SYSTEMS}")
    url = db.database_url()
    _check_local(url)
    started, runs, reps_done = time.monotonic(), [], 0
    for rep in range(args.reps):
        if rep and time.monotonic() - started > args.max_seconds:
            break
        for w in workers:
            order = systems[rep % len(systems):] + systems[:rep % len(systems)]
            for system in order:
                runs.append(run_one(url, system, w, args.jobs, timeout=max(120, args.jobs / 20)))
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
        reps_done += 1
    for schema in ("bench_cq", *SCHEMA.values()):
        with psycopg.connect(url, autocommit=True) as conn:
            db.drop_schema(conn, schema)
    rates = {s: {str(w): statistics.median(r["rate"] for r in runs
                                           if r["system"] == s and r["workers"] == w)
                 for w in workers} for s in systems}
    targets = {}
    for w in map(str, workers):
        def get(system, w=w):
            return rates.get(system, {}).get(w)

        targets[w] = {
            "ours_b1 / our_statements_b1 (>= 0.70)": ratio(get("ours_b1"),
                                                           get("our_statements_b1")),
            "ours_b1 / procrastinate (>= 2.0)": ratio(get("ours_b1"), get("procrastinate")),
            "ours_b10 / pgqueuer_b10 (>= 1.0)": ratio(get("ours_b10"), get("pgqueuer_b10")),
            "ours_b10 / our_statements_b10 (>= 0.70)": ratio(get("ours_b10"),
                                                             get("our_statements_b10")),
            "ours_b10_fm / pgqueuer_b10 (>= 1.0)": ratio(get("ours_b10_fm"),
                                                        get("pgqueuer_b10")),
            "ours_b10_fm / our_statements_b10_fm (>= 0.70)": ratio(get("ours_b10_fm"),
                                                            get("our_statements_b10_fm")),
        }
    with db.connect() as conn:
        server = db.server_version(conn, short=True)
    print(json.dumps({
        "jobs": args.jobs, "repetitions": reps_done, "workers": workers,
        "server": f"PostgreSQL {server}", "python": platform.python_version(),
        "cpus": mp.cpu_count(), "seconds": round(time.monotonic() - started, 1),
        "median_jobs_per_second": rates, "target_ratios": targets, "runs": runs,
    }, indent=2))


if __name__ == "__main__":
    main()
