"""Claim cost with 1M finished jobs in the table vs none: EXPLAIN (ANALYZE) of our claim statement.

Usage: .venv/bin/python bench/claim_cost.py [--finished 1000000] [--runs 200]

Both tables hold the same 100 pending jobs; one also holds `--finished` done jobs (built
with one INSERT ... SELECT generate_series, then ANALYZE). Each measurement runs the claim
under EXPLAIN (ANALYZE, FORMAT JSON) inside a transaction that is rolled back, so every
run claims from the same state. Prints JSON: median planning and execution times, the
scans the plan used on `jobs`, and the text plan of one run for each table. (On the
table without finished jobs, one data page, a sequential scan of it is the cheapest plan
for the UPDATE; with many finished jobs every access to `jobs` goes through an index.)
"""

from __future__ import annotations

import argparse
import json
import statistics

from cachequeue import db
from cachequeue.course import plans
from cachequeue.queue import jobs

CLAIM = jobs.query("claim").sql
PARAMS = {"limit": 1, "lease": 30.0, "kinds": None, "worker": "bench"}


def measure(conn, runs):
    planning, execution = [], []
    for _ in range(runs):
        doc = plans.explain(conn, CLAIM, PARAMS, analyze=True)
        planning.append(doc[0]["Planning Time"])
        execution.append(doc[0]["Execution Time"])
    text = plans.explain(conn, CLAIM, PARAMS, analyze=True, fmt="text")
    return {"planning_ms_median": round(statistics.median(planning), 4),
            "execution_ms_median": round(statistics.median(execution), 4),
            "scans_on_jobs": sorted(plans.scans(doc)), "plan": text}


def build(conn, schema, finished):
    db.reset_schema(conn, schema)
    plans.fill_finished(conn, finished, tenants=50)
    plans.fill_pending(conn, 100)
    plans.analyze(conn, vacuum=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    if args.finished < 0 or args.runs < 1:
        parser.error("--finished must be >= 0 and --runs >= 1")
    out = {}
    for label, finished in (("no_finished", 0), (f"{args.finished}_finished", args.finished)):
        schema = "bench_claim_cost"
        with db.connect() as conn:
            build(conn, schema, finished)
            size = plans.table_size(conn)
            out[label] = {"finished_rows": finished, "jobs_table_size": size,
                          **measure(conn, args.runs)}
            db.drop_schema(conn, schema)
    with db.connect() as conn:
        out["server"] = "PostgreSQL " + db.server_version(conn, short=True)
    out["runs"] = args.runs
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
