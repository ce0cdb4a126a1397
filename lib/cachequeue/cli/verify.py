"""`cachequeue verify`: one seeded run of the queue under faults, its history checked.

    cachequeue verify [--variant NAME] [--seed N] [--jobs N] [--workers N]
                      [--faults kill,pause,terminate,restart,cut,blackhole,delay]
                      [--per-kind N] [--time-limit S] [--keep DIR]

Runs `verify.driver.run` on a private throw-away server (never DATABASE_URL, never the
course's server), checks the history (`verify.checks`) and prints ONE JSON document on
stdout: the run's settings and figures and `violations`, a list whose items have `check`
(its name), `number` (its number in issue 21's list), `job`, `message` and `witness` (the
operations and rows that prove it). `--variant` picks a named mutant instead of the real
queue (`verify.variants.MUTANTS`). `--keep DIR` keeps the history (JSON lines), the
snapshot, the workers' logs and the run's timeline (timeline.png, the first violation's
witness in red, and timeline.html, the same lanes zoomable offline) in DIR. Before the fleet, the prober (`verify.prober`) walks its own jobs
through the situation of every check; after the nemesis, the workers drain until every job
settled or the time limit passed. The document also has `verdict` (pass, violations,
inconclusive), `opportunities` (per check, how many situations it judged) and
`without_opportunity` (the checks that could not have fired), and, for a run cut short,
`cut_short` (why) and `inconclusive` (the jobs left unsettled, never counted as lost).

Exit status: 0 no violation and every job settled; 1 violations (whatever else);
2 bad arguments (nothing is started); 3 inconclusive: no violation, but the run was cut
short (time limit, or no worker left) with jobs unsettled.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from ..verify import driver, variants
from .base import Command, UsageError

__all__ = ["COMMAND"]

EXIT_VIOLATIONS = 1
EXIT_INCONCLUSIVE = 3


def _faults(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",") if k.strip()] if text != "none" else []
    unknown = [k for k in kinds if k not in driver.FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown fault {unknown[0]!r}; choose from {','.join(driver.FAULTS)} or none")
    return kinds


# The whole-number options: default, meaning, and the range prepare() holds them to (None:
# any whole number; a default of None: the option may be left out).
_COUNTS = {
    "--seed": (1, "the seed of the workload and of the nemesis", None),
    "--jobs": (40, "jobs submitted", (1, 100_000)),
    "--workers": (3, "worker processes at once", (1, 32)),
    "--per-kind": (2, "faults of each kind", (0, 100)),
    "--tenants": (1, "tenants the jobs belong to, in turn", (1, 1000)),
    "--tenant-cap": (None, "claim fairly with at most N running jobs per tenant, and check it",
                     (1, 1000)),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variant", default=variants.REAL, choices=variants.VARIANTS,
                        help="the real queue (default) or a named mutant")
    for flag, (default, what, _) in _COUNTS.items():
        parser.add_argument(flag, type=int, default=default, metavar="N",
                            help=what + ("" if default is None else f" (default {default})"))
    parser.add_argument("--faults", type=_faults, default=list(driver.FAULTS),
                        metavar="KIND,...", help="fault kinds to inject, or none (default: all "
                        f"of {','.join(driver.FAULTS)})")
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                        help="seconds the run may take at most (default 60)")
    parser.add_argument("--keep", default=None, metavar="DIR",
                        help="keep the history, the snapshot and the workers' logs in DIR")


def prepare(args: argparse.Namespace) -> Callable[[], int]:
    for flag, (_, _, bounds) in _COUNTS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if bounds is not None and value is not None and not bounds[0] <= value <= bounds[1]:
            raise UsageError(f"{flag} must be between {bounds[0]} and {bounds[1]}, got {value}")
    if not 0 < args.time_limit <= 3600:
        raise UsageError(f"--time-limit must be in (0, 3600] seconds, got {args.time_limit:g}")
    if args.keep is not None and Path(args.keep).exists() and not Path(args.keep).is_dir():
        raise UsageError(f"--keep {args.keep}: not a directory (the run keeps several files "
                         f"there; give a directory, new or existing)")
    if args.variant == variants.CUSTOM:
        given = None if args.keep is None else Path(args.keep) / variants.CUSTOM_FILE
        if given is None or not given.is_file():
            raise UsageError(f"--variant {variants.CUSTOM} needs --keep DIR with the statements in "
                             f"DIR/{variants.CUSTOM_FILE} (verify.variants.write_custom writes it)")
        try:
            variants.load_custom(Path(args.keep))
        except (ValueError, TypeError) as exc:
            raise UsageError(f"{given}: {exc}") from None

    def run() -> int:
        result = driver.run(variant=args.variant, seed=args.seed, jobs=args.jobs,
                            workers=args.workers, faults=args.faults, per_kind=args.per_kind,
                            time_limit=args.time_limit, workdir=args.keep,
                            tenants=args.tenants, tenant_cap=args.tenant_cap)
        json.dump(result, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
        if result["violations"]:
            return EXIT_VIOLATIONS
        return EXIT_INCONCLUSIVE if result["inconclusive"] else 0

    return run


COMMAND = Command("verify", "run the queue (or a mutant) under seeded faults and check the history",
                  add_arguments, prepare)
