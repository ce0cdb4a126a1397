"""The lease lab of chapter 06: a learner's claim and finish, judged by the history checker.

    result = leaselab.run(claim_sql, finish_sql, seed=1)
    result["violations"]     # [] when every operation of the run passed every check
    result["shortest"]       # else the violation with the fewest witness operations
    leaselab.witness_lines(result["shortest"])   # the witness, one operation a line
    leaselab.figure(result)  # the run's timeline, the shortest witness in red

`run` checks the two statements (`verify.variants.check_custom`, and on `conn` when given:
`try_custom`, so that a statement the server refuses fails at once, not after a whole
run), writes them to a run folder and runs `verify.driver.run(variant="custom")` there:
real worker processes on a private throw-away server, under the seeded faults `faults`.
The folder (history, snapshot, workers' logs, timeline) is a temporary one, deleted when
the process exits, unless `folder` is given; `result["folder"]` says where it is.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg

from ...verify import driver, history, timeline, variants

__all__ = ["FAULTS", "faults_text", "figure", "run", "witness_lines"]

# The faults that expose a finish without the lease check (a paused holder wakes up after
# its lease ran out; a partition outlasts the lease) and a claim without FOR UPDATE SKIP
# LOCKED, which needs two workers claiming one job at the same moment (with the delays on,
# it was caught more often; why is not established). Four workers, seeds 1, 2, 3, 5: caught in
# every run; without "delay" in 2 of 3 runs (with three workers, in 2 of 5).
FAULTS = ("pause", "blackhole", "delay")


def run(claim: str, finish: str, *, seed: int = 1, jobs: int = 12, workers: int = 4,
        faults: Iterable[str] = FAULTS, per_kind: int = 2, time_limit: float = 30.0,
        conn: psycopg.Connection | None = None,
        folder: str | Path | None = None) -> dict[str, Any]:
    """One seeded verify run of the learner's `claim` and `finish`; driver.run's result
    with `shortest` (the violation with the shortest witness, or None) and `folder`."""
    if conn is not None:
        variants.try_custom(conn, claim, finish)
    if folder is None:  # a temporary folder, deleted when this process exits
        folder = Path(tempfile.mkdtemp(prefix="cq-lab-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    folder = Path(folder)
    variants.write_custom(folder, claim, finish)
    result = driver.run(variant=variants.CUSTOM, seed=seed, jobs=jobs, workers=workers,
                        faults=tuple(faults), per_kind=per_kind, time_limit=time_limit,
                        workdir=folder)
    found = result["violations"]
    result["shortest"] = min(found, key=lambda v: len(v["witness"])) if found else None
    result["folder"] = str(folder)
    return result


def faults_text(result: dict[str, Any]) -> str:
    """The faults a run injected, e.g. "pause×2, blackhole×2" (kinds it injected none of
    are left out)."""
    injected = result["faults_injected"]
    return ", ".join(f"{kind}×{n}" for kind, n in injected.items()
                     if n and kind != "cut_armed") or "none"


_TIMES = ("until", "created_at", "started_at", "finished_at", "locked_until", "rejected_at")


def _value(key: str, value: Any, zero: float) -> str:
    if key in _TIMES and isinstance(value, int | float) and zero:
        return f"{value - zero:.3f}s"
    if key in ("token", "lease_token") and isinstance(value, str):
        return value[:8]
    return str(value)


def _op_line(op: dict[str, Any], zero: float) -> str:
    if "row" in op:
        fields = {k: v for k, v in op.items() if k not in ("row", "output") and v is not None}
        return f"  row of {op['row']}: " + ", ".join(
            f"{k}={_value(k, v, zero)}" for k, v in fields.items())
    at = f"{op['time'] - zero:7.3f}s" if "time" in op and zero else " " * 8
    keep = ("job", "attempt", "token", "outcome", "until", "error")
    fields = ", ".join(f"{k}={_value(k, op[k], zero)}" for k in keep if op.get(k) is not None)
    return f"  {at} {op.get('process', '?'):>6} {op['type']:<7} {op['f']:<8} {fields}"


def witness_lines(violation: dict[str, Any], result: dict[str, Any] | None = None) -> str:
    """The witness of `violation`, one operation or row a line (times since the run began,
    when `result`, a kept run, is given)."""
    zero = 0.0
    if result is not None:
        ops = history.read(result["history"])
        zero = min((op["time"] for op in ops), default=0.0)
    return "\n".join(_op_line(op, zero) for op in violation["witness"])


def figure(result: dict[str, Any], violation: dict[str, Any] | None = None):
    """The timeline of a kept run (`run` keeps every run), `violation` (default: the
    shortest witness) highlighted."""
    ops = history.read(result["history"])
    snapshot = json.loads((Path(result["folder"]) / "snapshot.json").read_text(encoding="utf-8"))
    return timeline.figure(ops, snapshot, violation or result.get("shortest"))
