"""Handlers for real worker processes in the notebooks and the chaos run: `EFFECT_HANDLERS`.

    cachequeue worker --schema ch06 --handlers cachequeue.course.app.effects:EFFECT_HANDLERS

One kind, `effect`, does what a job with an external side effect does, in this order:

1. calls a "vendor" (a row in `effect_runs`): nothing protects it, so every run repeats it;
2. books a charge under the job's business key (`ledger`, primary key `business_key`):
   a second run inserts nothing, so the charge is booked once however often the job runs;
3. reports `started` on the worker's log (`ctx.report`): the moment a notebook waits for
   before it kills or stops the worker, instead of sleeping;
4. works for `work` seconds (`slow` seconds on the attempts listed in `slow_attempts`),
   cooperatively (it returns early when `ctx.should_stop()`) unless `cooperative` is false,
   which plays a handler stuck in a long call that never looks up;
5. returns who computed the result: worker, attempt, lease token, whether it booked.

`payload(...)` builds the payload and `submit(conn, key, ...)` submits such a job;
`install(conn)` adds the kind and the tables to a schema; `counts(conn)` says, per job,
how often the handler ran, how many charges were booked and how many results stored.
"""

from __future__ import annotations

import os
import time
from typing import Any

import psycopg

from ... import sqlfile
from ...checks import check_bool, check_int, check_seconds, check_text
from ...queue import jobs
from ...queue.context import JobContext

__all__ = ["EFFECT_HANDLERS", "counts", "effect", "install", "payload", "query", "submit"]

query = sqlfile.load(__package__, "effects.sql")
"""The named statements of `sql/effects.sql`: `query("name").sql` to read, print or EXPLAIN."""


def install(conn: psycopg.Connection) -> None:
    """Add the `effect` kind and the effect_runs, ledger and receipts tables to the schema."""
    conn.execute(query("install").sql)


def payload(key: str, *, amount: int = 100, work: float = 0.0, slow: float = 0.0,
            slow_attempts: tuple[int, ...] = (), cooperative: bool = True) -> dict[str, Any]:
    """The payload of an `effect` job (checked here, so a typo fails in the notebook)."""
    return {"key": check_text(key, "key"), "amount": check_int(amount, "amount", minimum=0),
            "work": check_seconds(work, "work", allow_zero=True, upper=3600),
            "slow": check_seconds(slow, "slow", allow_zero=True, upper=3600),
            "slow_attempts": [check_int(a, "each slow attempt", minimum=1) for a in slow_attempts],
            "cooperative": check_bool(cooperative, "cooperative")}


def submit(conn: psycopg.Connection, key: str, *, tenant_id: int = 1, max_attempts: int = 3,
           **options: Any) -> int:
    """Submit an `effect` job for business key `key` (options as for payload()); its id."""
    return jobs.submit(conn, tenant_id=tenant_id, kind="effect", max_attempts=max_attempts,
                       payload=payload(key, **options))


def effect(data: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    """The `effect` handler (see the module docstring for its five steps)."""
    claim = ctx.claim
    with ctx.connect() as conn:
        conn.execute(query("record_run").sql, {
            "job_id": claim.job_id, "attempt": claim.attempt, "worker": ctx.worker,
            "pid": os.getpid()})
        booked = conn.execute(query("book").sql, {
            "key": data["key"], "job_id": claim.job_id, "attempt": claim.attempt,
            "amount": data.get("amount", 0)}).fetchone() is not None
    ctx.report("started", booked=booked)
    seconds = data.get("slow", 0.0) if claim.attempt in data.get("slow_attempts", []) \
        else data.get("work", 0.0)
    if data.get("cooperative", True):
        ctx.wait(seconds)  # returns early once the lease is lost or the job handed back
    else:
        time.sleep(seconds)  # a call that never looks up
    return {"worker": ctx.worker, "attempt": claim.attempt, "token": str(claim.lease_token),
            "booked": booked, "stopped": ctx.reason}


def counts(conn: psycopg.Connection) -> list[tuple[int, int, int, int]]:
    """(job_id, runs, charges, results) of every `effect` job, by job id."""
    return conn.execute(query("counts").sql).fetchall()


EFFECT_HANDLERS = {"effect": effect}
