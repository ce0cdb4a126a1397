"""A job's history as numbered events: what `GET /v1/jobs/{id}/events` streams.

The events are not kept anywhere: `history()` derives them, every time, from the rows the
queue writes anyway (the job, its attempt rows, its audit rows; the `events` query in
`sql/service.sql` says how). So they are exactly as true as the tables, they survive a
restart of the service, and event number `seq` always names the same event: a client that
reconnects with `Last-Event-ID: 3` gets events 4, 5, ... with no gap and no repeat, from
this process or any other.

    accepted   pending     the job was persisted (the 202)
    started    running     an attempt began (also a takeover of an expired lease)
    retrying   pending     the attempt failed; a retry is scheduled
    released   pending     a stopping worker handed the job back
    done       done        the result is stored
    failed     failed      permanent error, attempts used up, or the last lease expired
    cancelled  cancelled   cancelled while pending or running
    requeued   pending     an operator retried a failed job
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from .. import sqlfile
from ..checks import check_int

__all__ = ["FINAL_STATES", "Event", "History", "history", "query"]

FINAL_STATES = frozenset({"done", "failed", "cancelled"})
query = sqlfile.load(__package__, "service.sql")
"""The named statements of `sql/service.sql`: `query("name").sql` to read, print or EXPLAIN."""


@dataclass(frozen=True)
class Event:
    """One event of a job's history; `state` is the job's state right after it."""

    seq: int
    event: str
    state: str
    attempt: int
    at: datetime
    error: str | None

    def data(self, job_id: int) -> dict[str, Any]:
        """The JSON an event carries on the stream."""
        return {"job_id": job_id, "seq": self.seq, "event": self.event, "state": self.state,
                "attempt": self.attempt, "at": self.at.isoformat(), "error": self.error}


@dataclass(frozen=True)
class History:
    """The events after a given number, and the job's state now (None: no such job here)."""

    state: str | None
    events: list[Event]

    @property
    def found(self) -> bool:
        return self.state is not None

    @property
    def final(self) -> bool:
        """The job is done, failed or cancelled: no event will follow unless an operator
        retries it."""
        return self.state in FINAL_STATES


def history(conn: psycopg.Connection, *, tenant_id: int, job_id: int,
            after: int = 0) -> History:
    """Events of this tenant's job numbered above `after`, in order, in one statement."""
    params = {"tenant_id": check_int(tenant_id, "tenant_id"), "job_id": check_int(job_id, "job_id"),
              "after": check_int(after, "after", minimum=0)}
    rows = conn.execute(query("events").sql, params).fetchall()
    state = rows[0][0]
    return History(state, [Event(*row[1:]) for row in rows if row[1] is not None])
