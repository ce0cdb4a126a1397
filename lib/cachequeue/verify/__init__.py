"""Verifying a queue: record every operation of a run under faults, then check the history.

- `history`: the recorder (JSON lines: invoke / ok / fail / unknown / info) and the final
  snapshot of the tables that resolves every unknown.
- `checks`: the checks, job by job, each violation with a minimal witness.
- `driver`: a seeded run of real worker processes on a private server under a nemesis
  (`run`); `proxy`: the fault proxy in front of PostgreSQL (toxiproxy-shaped);
  `workerproc`: one recorded worker process; `prober`: the scripted client that gives
  every check its situation on every seed; `instrument`: the recording wrappers;
  `variants`: the real queue and its named mutants.
- `schedules`: the checks of queue.schedules (a fire time enqueued twice, beyond its
  policy, or missed) and its mutant without the unique key; `schedrun`: its fault run
  (`cachequeue verify-schedules`).

This part imports the ground floor and `queue`, never `course`, `cache`, `shared` or
`service`. The `cachequeue verify` command (`cli/verify.py`) runs it.
"""

from . import checks, history, schedules
from .checks import CHECKS, Violation, check

__all__ = ["CHECKS", "Violation", "check", "checks", "history", "schedules"]
