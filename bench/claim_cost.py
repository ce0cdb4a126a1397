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

from cachequeue import db, sqlfile

CLAIM = sqlfile.load("queries.sql")["claim"].sql
PARAMS = {"limit": 1, "lease": 30.0, "kinds": None, "worker": "bench"}


class _Rollback(Exception):
    pass


def _nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _explain(conn, fmt):
    try:
        with conn.transaction():
            rows = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT {fmt}) " + CLAIM,
                                PARAMS).fetchall()
            raise _Rollback(rows)
    except _Rollback as done:
        return done.args[0]


def measure(conn, runs):
    planning, execution = [], []
    for _ in range(runs):
        [(doc,)] = _explain(conn, "JSON")
        doc = doc if not isinstance(doc, str) else json.loads(doc)
        planning.append(doc[0]["Planning Time"])
        execution.append(doc[0]["Execution Time"])
    scans = sorted({n["Node Type"] + (f' using {n["Index Name"]}' if "Index Name" in n else "")
                    for n in _nodes(doc[0]["Plan"])
                    if "Scan" in n["Node Type"] and n.get("Relation Name") == "jobs"})
    text = "\n".join(r[0] for r in _explain(conn, "TEXT"))
    return {"planning_ms_median": round(statistics.median(planning), 4),
            "execution_ms_median": round(statistics.median(execution), 4),
            "scans_on_jobs": scans, "plan": text}


def build(conn, schema, finished):
    db.reset_schema(conn, schema)
    if finished:
        conn.execute(
            "INSERT INTO jobs (tenant_id, kind, payload, state, attempts, finished_at)"
            " SELECT n %% 50, 'noop', '{}', 'done', 1, cq_now()"
            " FROM generate_series(1, %s) n", [finished])
    conn.execute("INSERT INTO jobs (tenant_id, kind, payload)"
                 " SELECT 1, 'noop', '{}' FROM generate_series(1, 100)")
    conn.execute("VACUUM ANALYZE jobs")


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
            size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('jobs'))").fetchone()[0]
            out[label] = {"finished_rows": finished, "jobs_table_size": size,
                          **measure(conn, args.runs)}
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    with db.connect() as conn:
        out["server"] = "PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0]
    out["runs"] = args.runs
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
