"""Two ceilings of concurrency measured on real processes: the connection pool and memory (Q12).

**The pool.** `small_app` is the course's app with a pool of POOL_SIZE connections that
sheds beyond MAX_IN_FLIGHT database calls (`cachequeue serve --app
cachequeue.course.procs.capacity:small_app`). `crowd(...)` holds the jobs table with a
migration's lock, sends MAX_IN_FLIGHT status requests, waits until the service reports
them in flight (its `cq_http_in_flight` gauge) and the database shows POOL_SIZE sessions
waiting for the lock (the pool is full; the last request waits for a connection), then
sends one more request, which is answered at once with 503 `overloaded`; it releases the
lock and collects the held answers. Nothing sleeps on the hope that something happened:
every step waits for what it needs to see, with a deadline.

Imports stay light at the top (FastAPI and httpx are imported where they are used), so a
worker that loads `HANDLERS` carries neither in the memory it measures.

**Memory.** `HANDLERS` (`{"noop": hold}`) is for `cachequeue worker --handlers
cachequeue.course.procs.capacity:HANDLERS`: each job allocates `payload["mib"]` MiB
(every page written, so resident), reports `holding` on the worker's log, and waits until
told to stop. `rss(pid)` reads a process's resident set size, so a notebook can read the
worker's memory with 0, 1, 2, ... handlers holding.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from ... import sqlfile
from ...checks import check_int, check_seconds, check_text
from ...queue.context import JobContext
from ..probes import tablelocks
from .overload import metric, until

__all__ = ["HANDLERS", "HANDLERS_SPEC", "MAX_IN_FLIGHT", "MIB", "POOL_SIZE", "SMALL_APP", "crowd",
           "hold", "rss", "small_app", "waiting_for_jobs"]

SMALL_APP = "cachequeue.course.procs.capacity:small_app"  # for Stack(app=...) / serve --app
HANDLERS_SPEC = "cachequeue.course.procs.capacity:HANDLERS"  # for Stack(handlers=...)
POOL_SIZE = 2  # connections in small_app's pool
MAX_IN_FLIGHT = 3  # database calls under way before small_app sheds the next one
MIB = 1 << 20
_QUERIES = sqlfile.load(__package__, "capacity.sql")


def small_app(schema: str, *, demo: bool = False) -> Any:
    """The course's app with POOL_SIZE connections and MAX_IN_FLIGHT calls at most; a
    request waits up to 30 s for a connection, and its statement up to 30 s for a lock
    (the service's default lock_timeout, 2 s, would end the held requests that `crowd`
    keeps behind the migration's lock before it has looked at them)."""
    from ..app import webapp  # FastAPI: only the service process needs it

    return webapp.create_app(schema, demo=demo, pool_size=POOL_SIZE,
                             max_in_flight=MAX_IN_FLIGHT, pool_timeout=30.0,
                             lock_timeout=30.0, statement_timeout=30.0)


def hold(payload: dict, ctx: JobContext) -> dict:
    """Hold `payload["mib"]` MiB until told to stop (at most `payload["seconds"]`, 300)."""
    size = check_int(payload.get("mib"), "payload mib", minimum=1, maximum=1024) * MIB
    block = b"\x01" * size  # written, so every page is resident
    ctx.report("holding", mib=size // MIB)
    ctx.wait(check_seconds(payload.get("seconds", 300.0), "payload seconds", upper=3600.0))
    return {"held": len(block)}


HANDLERS = {"noop": hold}


def rss(pid: int) -> int:
    """The resident set size of process `pid`, in bytes (/proc on Linux, `ps` elsewhere)."""
    pid = check_int(pid, "pid", minimum=1)
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True,
                         check=True).stdout
    return int(out.strip()) * 1024


def waiting_for_jobs(conn: psycopg.Connection) -> int:
    """How many sessions wait for a lock on the jobs table of the connection's schema."""
    return conn.execute(_QUERIES["waiting_for_jobs"].sql).fetchone()[0]


def crowd(conn: psycopg.Connection, schema: str, *, api_url: str, metrics_url: str,
          headers: dict[str, str], job_id: int, timeout: float = 30.0) -> dict[str, Any]:
    """Fill small_app's limits and ask once more (see the module docstring). Returns what
    was seen with MAX_IN_FLIGHT requests held: `in_flight` (the service's gauge),
    `waiting` (sessions waiting for the lock: the pool's connections), the extra answer
    (`extra_status`, `extra_code`, `extra_retry_after`, `extra_seconds`), the held
    requests' statuses once the lock is gone (`held`), and `shed` (cq_http_shed_total)."""
    import httpx  # the `lab` extra: the worker processes that import HANDLERS do without it

    check_text(schema, "schema")
    timeout = check_seconds(timeout, "timeout", upper=300.0)
    path = f"/v1/jobs/{check_int(job_id, 'job_id', minimum=1)}"
    held: list[int | None] = [None] * MAX_IN_FLIGHT
    with httpx.Client(base_url=api_url, timeout=timeout) as api, \
            httpx.Client(base_url=metrics_url, timeout=timeout) as operator:
        def ask(i: int) -> None:
            held[i] = api.get(path, headers=headers).status_code

        with tablelocks.migration_lock(schema):
            threads = [threading.Thread(target=ask, args=(i,), daemon=True)
                       for i in range(MAX_IN_FLIGHT)]
            for thread in threads:
                thread.start()
            until(lambda: metric(operator, "cq_http_in_flight") == MAX_IN_FLIGHT, timeout,
                  f"{MAX_IN_FLIGHT} requests in flight", poll=0.02)
            until(lambda: waiting_for_jobs(conn) == POOL_SIZE, timeout,
                  f"{POOL_SIZE} sessions waiting for the lock", poll=0.02)
            seen = {"in_flight": metric(operator, "cq_http_in_flight"), "waiting": waiting_for_jobs(conn)}
            started = time.perf_counter()
            extra = api.get(path, headers=headers)
            seen["extra_seconds"] = time.perf_counter() - started
        for thread in threads:
            thread.join(timeout)
        shed = metric(operator, "cq_http_shed_total")
    return seen | {"extra_status": extra.status_code, "extra_code": extra.json().get("code"),
                   "extra_retry_after": extra.headers.get("retry-after"), "held": held,
                   "shed": shed}
