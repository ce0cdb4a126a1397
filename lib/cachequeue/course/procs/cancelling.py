"""Cancelling a job while a real `queue.Worker` runs it (chapter 09, Q20).

`cancel_while_running(conn, "ch09")` submits a `noop` job, runs a Worker in a thread of this
process with a cooperative handler (it waits on its `JobContext`), cancels the job at the
moment the handler has started, and waits until the handler returned. No sleeps: the
handler's own events say when. The Worker hears the cancel notification, renews at once,
finds the lease gone and sets the context's stop reason; the handler's late result is
refused by the lease token.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from ... import db
from ...checks import check_seconds, check_text
from ...queue import Worker, jobs

__all__ = ["HEARTBEAT", "LEASE", "cancel_while_running"]

LEASE = 5.0
"""The worker's lease (seconds): without a cancel, the handler could run this long."""
HEARTBEAT = LEASE / 3
"""Seconds between its periodic renewals (the Worker's default, lease / 3)."""


def cancel_while_running(conn: psycopg.Connection, schema: str, *,
                         timeout: float = 30.0) -> dict[str, Any]:
    """What the handler saw (`woken`, `reason`), the job's final state, the worker's counts
    of lost leases, refused reports and finished jobs, and `times`: seconds since the handler
    started of the cancel's commit (`cancelled`) and of the handler's waking (`woken`)."""
    check_text(schema, "schema")
    timeout = check_seconds(timeout, "timeout")
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={"cancel": "me"})
    started, returned = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    moments: dict[str, float] = {}  # time.monotonic() of each step

    def handler(payload: dict, ctx: Any) -> str:
        moments["started"] = time.monotonic()
        started.set()
        seen["woken"] = ctx.wait(timeout)  # True when told to stop, False if time ran out
        moments["woken"] = time.monotonic()
        seen["reason"] = ctx.reason
        returned.set()
        return "a late result nobody may publish"

    worker = Worker(lambda: db.connect(schema), {"noop": handler}, name="canceller", lease=LEASE,
                    poll=0.2, heartbeat=HEARTBEAT)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        if not started.wait(timeout):
            raise TimeoutError("the handler never started")
        jobs.cancel(conn, tenant_id=1, job_id=job_id, actor="user:10", reason="changed mind")
        moments["cancelled"] = time.monotonic()  # the cancel has committed
        if not returned.wait(timeout):
            raise TimeoutError("the handler never returned")
    finally:
        worker.stop()
        thread.join(timeout)
    return {"woken": seen["woken"], "reason": seen["reason"],
            "state": jobs.status(conn, tenant_id=1, job_id=job_id).state,
            "stats": {key: worker.stats[key] for key in ("lost", "rejected", "finished")},
            "times": {key: moments[key] - moments["started"] for key in ("cancelled", "woken")}}
