"""The held horizon at a larger scale: chapter 14's experiment (course.procs.horizonload) on a private server.

Usage: .venv/bin/python bench/queue_health.py [--holder report|writer|query] [--before 5]
       [--held 20] [--after 5] [--jobs-per-round 2000] [--churn-rounds 20] [--out FILE]

Runs on a private embedded PostgreSQL (`embedded.Server.private`, autovacuum off, whatever
DATABASE_URL says): the experiment holds the horizon of a whole database on purpose, which
no shared server should suffer. Each round inserts `--jobs-per-round` pending jobs, measures
one claim (EXPLAIN (ANALYZE, BUFFERS), rolled back), drains them with claim_many /
finish_many batches of ten, VACUUMs, and records what VACUUM removed and had to keep, the
table's and its indexes' sizes, the claim's buffers and its mean wall time. Then the churn
comparison: the same load on a clock stepped by hand, without retention and with a policy
of two rounds. Prints JSON (with --out, also to FILE, with the machine facts). The defaults
take minutes and most of a core: never on a shared machine; `--held 2 --jobs-per-round 50`
is a smoke run.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from cachequeue import db, embedded
from cachequeue.course import chapter
from cachequeue.course.labs import perf
from cachequeue.course.procs import horizonload

SCHEMA = "bench_queue_health"


def summary(points):
    """Before / during / after figures of a run: the numbers the chapter's closing note gives."""
    by_phase = {}
    for phase in ("before", "held", "released", "after"):
        rows = [p for p in points if p.phase == phase]
        if rows:
            last = rows[-1]
            by_phase[phase] = {"jobs": last.jobs, "dead_kept": last.kept, "removed": last.removed,
                               "table_bytes": last.table_bytes, "index_bytes": last.index_bytes,
                               "claim_buffers": last.claim_buffers,
                               "claim_ms_mean": (round(sum(r.claim_ms for r in rows) / len(rows), 3)
                                                 if last.claim_ms is not None else None)}
    return by_phase


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holder", default="report", choices=horizonload.HOLDERS)
    parser.add_argument("--before", type=int, default=5)
    parser.add_argument("--held", type=int, default=20)
    parser.add_argument("--after", type=int, default=5)
    parser.add_argument("--jobs-per-round", type=int, default=2000)
    parser.add_argument("--churn-rounds", type=int, default=20)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if min(args.before, args.held, args.after, args.jobs_per_round, args.churn_rounds) < 1:
        parser.error("every count must be >= 1")
    out = {"benchmark": "queue_health", "holder": args.holder,
           "jobs_per_round": args.jobs_per_round}
    with embedded.Server.private(settings=horizonload.SETTINGS) as server:
        with db.connect(url=server.url) as setup:
            chapter.reset(setup, SCHEMA)
        with db.connect(SCHEMA, url=server.url) as conn:
            points = horizonload.run(conn, server.url, SCHEMA, holder=args.holder,
                                     before=args.before, held=args.held, after=args.after,
                                     jobs_per_round=args.jobs_per_round)
            out["summary"] = summary(points)
            out["rounds"] = [asdict(p) for p in points]
            churn = {}
            for name, keep in (("no_retention", None), ("retention_two_rounds", 120.0)):
                with db.connect(url=server.url) as setup:
                    chapter.reset(setup, SCHEMA)
                churn[name] = horizonload.churn(conn, rounds=args.churn_rounds,
                                                jobs_per_round=args.jobs_per_round,
                                                keep_seconds=keep)
            out["churn"] = {name: [{"jobs": j, "table_bytes": b} for j, b in sizes]
                            for name, sizes in churn.items()}
            out["machine"] = perf.machine(conn, server.url)
    perf.emit(out, args.out)


if __name__ == "__main__":
    main()
