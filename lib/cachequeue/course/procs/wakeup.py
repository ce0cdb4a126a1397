"""How an idle worker learns of new work: LISTEN/NOTIFY against polling, measured on real processes.

`measure(fleet, conn, name, idle=2.0, samples=6, **options)` starts `cachequeue worker`
twice with the same options (e.g. `listen=False, poll=0.1`):

- idle: the worker sits with nothing to do for `idle` seconds; the statements it sent in
  that time come from its own log (the count at `ready` and at `stopped`, less the one that
  marks it stopped), so the figure is exact, not sampled from server statistics;
- latency: `samples` jobs are submitted one at a time, each after the previous one
  finished and a random pause: up to one poll interval for a polling worker (so the jobs
  fall on random phases of its poll), up to 0.2 s for a listening one (whose latency does
  not depend on the phase). The latency of each is its first attempt's start minus its
  insert, both read on the database clock.

The waits here are the measuring windows themselves, not guesses that something happened.
`COLUMNS` labels the figures a notebook shows, in the glossary's Chinese terms.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

import psycopg

from ... import sqlfile
from ...checks import check_int, check_seconds
from ...queue import jobs
from ..app import effects
from .fleet import Fleet

__all__ = ["COLUMNS", "measure"]

# The figures of measure() a notebook table shows, and their labels (docs/glossary.md).
COLUMNS = {"statements": "空闲时的语句数", "per_second": "每秒语句数",
           "latency_median_s": "延迟中位数（秒）", "latency_max_s": "最大延迟（秒）"}

_QUERIES = sqlfile.load(__package__, "wakeup.sql")


def _idle_statements(fleet: Fleet, name: str, idle: float, options: dict) -> dict[str, Any]:
    worker = fleet.start(name, **options)
    ready = worker.find("ready")[0]
    time.sleep(idle)  # the measuring window
    worker.terminate()
    worker.wait()
    stopped = worker.find("stopped")[0]
    loop = stopped["statements"] - ready["statements"] - 1  # less the deregister at the end
    listener = stopped["listener_statements"] - ready["listener_statements"]
    return {"idle_s": idle, "statements": loop + listener,
            "per_second": round((loop + listener) / idle, 2)}


def measure(fleet: Fleet, conn: psycopg.Connection, name: str, *, idle: float = 2.0,
            samples: int = 6, seed: int = 0,
            **options: Any) -> dict[str, Any]:
    """Idle statements per second and submit-to-start latency of one worker configuration."""
    check_seconds(idle, "idle")
    check_int(samples, "samples", minimum=1)
    rng = random.Random(seed)
    result = _idle_statements(fleet, f"{name}-idle", idle, options)
    worker = fleet.start(f"{name}-busy", **options)
    gap = 0.2 if options.get("listen", True) else options.get("poll", 1.0)
    ids = []
    for n in range(samples):
        time.sleep(rng.uniform(0, gap))  # a random phase of the poll
        job_id = jobs.submit(conn, tenant_id=1, kind="effect",
                             payload=effects.payload(f"{name}-{n}-{rng.random()}"))
        worker.wait_for("finished", job=job_id)
        ids.append(job_id)
    worker.terminate()
    worker.wait()
    latencies = [s for _, s in conn.execute(_QUERIES["start_latency"].sql, {"job_ids": ids})]
    result.update({"samples": samples, "latency_median_s": round(statistics.median(latencies), 4),
                   "latency_max_s": round(max(latencies), 4)})
    return result
