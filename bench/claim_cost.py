"""Claim cost with 0, 100k and 1M finished jobs in the table: EXPLAIN (ANALYZE) of our claim statement.

Usage: .venv/bin/python bench/claim_cost.py [--finished 100000,1000000] [--runs 200] [--out FILE]

Every table holds the same 100 pending jobs; besides the empty history, each also holds one
of the `--finished` counts of done jobs (built with one INSERT ... SELECT generate_series,
then VACUUM ANALYZE). Each measurement runs the claim
under EXPLAIN (ANALYZE, FORMAT JSON) inside a transaction that is rolled back, so every
run claims from the same state. Prints JSON: median planning and execution times, the
scans the plan used on `jobs`, the shared buffers it touched (a cost that does not depend
on timing), and the text plan of one run for each table; with --out, also to FILE, with the
machine facts (cores, PostgreSQL version and settings, date). (On the
table without finished jobs, one data page, a sequential scan of it is the cheapest plan
for the UPDATE; with many finished jobs every access to `jobs` goes through an index.)
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from cachequeue import db
from cachequeue.course import chapter
from cachequeue.course.labs import perf
from cachequeue.course.probes import plans
from cachequeue.queue import jobs

CLAIM = jobs.query("claim").sql
PARAMS = {"limit": 1, "lease": 30.0, "kinds": None, "worker": "bench", "chosen": None}


def measure(conn, runs):
    planning, execution, buffers = [], [], []
    for _ in range(runs):
        doc = plans.explain(conn, CLAIM, PARAMS, analyze=True)
        planning.append(doc[0]["Planning Time"])
        execution.append(doc[0]["Execution Time"])
        top = doc[0]["Plan"]
        buffers.append(top["Shared Hit Blocks"] + top["Shared Read Blocks"])
    text = plans.explain(conn, CLAIM, PARAMS, analyze=True, fmt="text")
    return {"planning_ms_median": round(statistics.median(planning), 4),
            "execution_ms_median": round(statistics.median(execution), 4),
            "shared_buffers_median": statistics.median(buffers),
            "scans_on_jobs": sorted(plans.scans(doc)), "plan": text}


def build(conn, schema, finished):
    chapter.reset(conn, schema)
    plans.fill_finished(conn, finished, tenants=50)
    plans.fill_pending(conn, 100)
    plans.analyze(conn, vacuum=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", default="100000,1000000",
                        help="finished-row counts to compare with an empty history")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    db.database_url(start=True)  # set-up: start the embedded server unless DATABASE_URL is set
    sizes = [0, *(int(n) for n in args.finished.split(",") if n)]
    if min(sizes) < 0 or args.runs < 1:
        parser.error("--finished counts must be >= 0 and --runs >= 1")
    out = {"benchmark": "claim_cost", "runs": args.runs, "sizes": {}}
    for finished in sizes:
        schema = "bench_claim_cost"
        with db.connect() as conn:
            build(conn, schema, finished)
            size = plans.table_size(conn)
            out["sizes"][str(finished)] = {"finished_rows": finished, "jobs_table_size": size,
                                           **measure(conn, args.runs)}
            db.drop_schema(conn, schema)
    with db.connect() as conn:
        out["machine"] = perf.machine(conn, db.database_url())
    perf.emit(out, args.out)


if __name__ == "__main__":
    main()
