"""Chaos: 2,000 jobs, 4 worker processes killed / paused / respawned at random, the server restarted once.

Usage: .venv/bin/python bench/chaos.py [--jobs 2000] [--workers 4] [--kills 12] [--stops 8]
                                       [--restarts 1] [--seed N] [--restart-mode immediate]
                                       [--batch 100] [--batch-wait 0.45] [--flush-kills N]
                                       [--no-batch] [--broker postgres|nats]

Runs cachequeue.course.procs.chaos.run on a private throw-away PostgreSQL (whatever DATABASE_URL
says) and prints its result as JSON: the plan carried out, the workers' exit statuses, the
events their logs counted, and the verdict read from the tables (lost, duplicates, results
not written by their own attempt, stuck jobs, stale reports rejected, handler runs). With
batching (the default) some kills land between a handler's return and the flush of its
result (`flush_kills_landed`); `--no-batch` runs the workers with a commit per job. Exit
status 1, with every broken invariant and the seed on stderr, if anything was lost or
duplicated. Takes about a minute on two cores.

`--broker nats`: the same kinds of chaos against `cachequeue worker --broker nats` on a
private nats-server, the broker SIGKILLed and restarted instead of PostgreSQL
(cachequeue.course.procs.brokerchaos; --batch, --batch-wait, --flush-kills and --restart-mode
do not apply).
"""

from __future__ import annotations

import argparse
import json
import sys

from cachequeue.course.procs import brokerchaos, chaos


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--stops", type=int, default=8)
    parser.add_argument("--restarts", type=int, default=1)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--restart-mode", choices=["fast", "immediate"], default="immediate")
    parser.add_argument("--batch", type=int, default=100, help="the workers' --batch")
    parser.add_argument("--batch-wait", type=float, default=0.45, help="the workers' --batch-wait")
    parser.add_argument("--no-batch", dest="batch", action="store_const", const=1,
                        help="a durable commit per job (--batch 1), no flush kills")
    parser.add_argument("--flush-kills", type=int, default=None,
                        help="kills between a handler's return and the flush (default kills/3)")
    parser.add_argument("--broker", choices=["postgres", "nats"], default="postgres",
                        help="the workers' broker: the PostgreSQL queue, or NATS JetStream")
    args = parser.parse_args(argv)
    if args.broker == "nats":
        result = brokerchaos.run(jobs=args.jobs, workers=args.workers, seed=args.seed,
                                  kills=args.kills, stops=args.stops, restarts=args.restarts)
        result["failures"] = brokerchaos.failures(result)
        return _report(result)
    if args.flush_kills is None:
        args.flush_kills = max(1, args.kills // 3) if args.batch > 1 else 0
    result = chaos.run(jobs=args.jobs, workers=args.workers, seed=args.seed, kills=args.kills,
                       stops=args.stops, restarts=args.restarts, restart_mode=args.restart_mode,
                       batch=args.batch, batch_wait=args.batch_wait,
                       flush_kills=args.flush_kills)
    result["failures"] = chaos.failures(result)
    return _report(result)


def _report(result: dict) -> int:
    print(json.dumps(result, indent=2))
    for line in result["failures"]:
        print(f"chaos: {line}", file=sys.stderr)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
