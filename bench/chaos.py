"""Chaos: 2,000 jobs, 4 worker processes killed / paused / respawned at random, the server restarted once.

Usage: .venv/bin/python bench/chaos.py [--jobs 2000] [--workers 4] [--kills 12] [--stops 8]
                                       [--restarts 1] [--seed N] [--restart-mode immediate]

Runs cachequeue.course.chaos.run on a private throw-away PostgreSQL (whatever DATABASE_URL
says) and prints its result as JSON: the plan carried out, the workers' exit statuses, the
events their logs counted, and the verdict read from the tables (lost, duplicates, results
not written by their own attempt, stuck jobs, stale reports rejected, handler runs). Exit
status 1, with every broken invariant and the seed on stderr, if anything was lost or
duplicated. Takes about a minute on two cores.
"""

from __future__ import annotations

import argparse
import json
import sys

from cachequeue.course import chaos


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--stops", type=int, default=8)
    parser.add_argument("--restarts", type=int, default=1)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--restart-mode", choices=["fast", "immediate"], default="immediate")
    args = parser.parse_args(argv)
    result = chaos.run(jobs=args.jobs, workers=args.workers, seed=args.seed, kills=args.kills,
                       stops=args.stops, restarts=args.restarts, restart_mode=args.restart_mode)
    result["failures"] = chaos.failures(result)
    print(json.dumps(result, indent=2))
    for line in result["failures"]:
        print(f"chaos: {line}", file=sys.stderr)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
