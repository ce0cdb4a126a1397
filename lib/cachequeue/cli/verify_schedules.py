"""`cachequeue verify-schedules`: the schedules' fault run, checked (`verify.schedrun`).

    cachequeue verify-schedules [--variant real|no-fire-key] [--seed N] [--schedulers N]
                                [--steps N]

Scheduler processes on a private server race on every fire time; one is SIGKILLed after it
planned, one SIGSTOPped after it planned and resumed past the next fire time, the server is
restarted, and for half an hour no scheduler runs. Prints the figures and the violations
(JSON) and exits 0 when there are none, 1 when there are (the `no-fire-key` mutant, which
lacks the unique key per schedule and fire time, is expected to exit 1), 2 for bad
arguments. About 15 seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from ..verify import schedrun
from ..verify.schedules import SCHEDULE_VARIANTS
from .base import Command, UsageError

__all__ = ["COMMAND"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variant", default="real", choices=SCHEDULE_VARIANTS,
                        help="the real schedules, or the mutant without the unique key")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="draws the steps the faults hit (default 0)")
    parser.add_argument("--schedulers", type=int, default=3, metavar="N",
                        help="scheduler processes at once, 2 to 8 (default 3)")
    parser.add_argument("--steps", type=int, default=36, metavar="N",
                        help="five-minute steps of the database clock, 30 to 500 (default 36)")


def prepare(args: argparse.Namespace) -> Callable[[], int]:
    if not 2 <= args.schedulers <= 8:
        raise UsageError(f"--schedulers must be 2 to 8, got {args.schedulers}")
    if not 30 <= args.steps <= 500:
        raise UsageError(f"--steps must be 30 to 500, got {args.steps}")

    def run() -> int:
        result = schedrun.run(schedulers=args.schedulers, steps=args.steps, seed=args.seed,
                              variant=args.variant)
        shown = {k: result[k] for k in ("variant", "seed", "plan", "figures")}
        shown["violations"] = result["violations"][:20]
        json.dump(shown, sys.stdout, indent=1, default=str)
        print()
        return 1 if result["violations"] else 0

    return run


COMMAND = Command("verify-schedules",
                  "the schedules' fault run (kill, pause, restart, outage), checked: each fire "
                  "time enqueued once, none beyond the missed-fire policy",
                  add_arguments, prepare)
