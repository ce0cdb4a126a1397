"""Scheduler processes killed, paused, a server restart and an outage: each fire time
enqueued once (issue 31). The run itself is `cachequeue.verify.schedrun` (so that
`cachequeue verify-schedules` can run it too); this is the name a chapter imports.

    from cachequeue.course.procs import schedulers
    result = schedulers.run(schedulers=3, steps=36, seed=2026)
    result["figures"], result["violations"]
"""

from __future__ import annotations

from ...verify.schedrun import SCHEDULES, START, STEP, run

__all__ = ["SCHEDULES", "START", "STEP", "run"]
