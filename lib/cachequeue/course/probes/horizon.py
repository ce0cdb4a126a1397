"""What an open transaction holds while nothing runs in it: a row lock, a transaction id, maybe a snapshot.

Chapter 03 runs a slow "model call" once outside any transaction and once inside the
transaction that claimed the job. These probes, run from a second connection, show the
difference in the terms PostgreSQL uses:

- `activity(observer, observed)`: `pg_stat_activity`'s state of a backend, whether it holds a
  transaction id (`backend_xid`: it has written, and until it ends VACUUM must keep every
  row version deleted after it started) and whether it holds a snapshot (`backend_xmin`; under
  READ COMMITTED a snapshot lives only while a statement runs);
- `job_row_locked(conn, job_id)`: whether another transaction holds the job's row lock
  (`FOR UPDATE NOWAIT` fails at once instead of waiting);
- `vacuum_jobs(conn)`: VACUUM the jobs table and return how many dead row versions it
  removed and how many it had to keep ("dead but not yet removable").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg

from ... import sqlfile
from ...checks import check_autocommit_idle, check_int

__all__ = ["Activity", "VacuumCounts", "activity", "job_row_locked", "vacuum_jobs"]

_TUPLES = re.compile(r"tuples: (\d+) removed, \d+ remain, (\d+) are dead but not yet removable")


def _query(name: str) -> str:
    return sqlfile.load(__package__, "horizon.sql")[name].sql


@dataclass(frozen=True)
class Activity:
    """A backend's state and whether it holds a transaction id and a snapshot."""

    state: str
    holds_xid: bool
    holds_snapshot: bool


@dataclass(frozen=True)
class VacuumCounts:
    """Dead row versions of the jobs table that one VACUUM removed, and those it had to keep."""

    removed: int
    kept: int


def activity(observer: psycopg.Connection, observed: psycopg.Connection) -> Activity:
    """What pg_stat_activity, read on `observer`, says of `observed`'s backend."""
    row = observer.execute(_query("activity"), {"pid": observed.info.backend_pid}).fetchone()
    if row is None:
        raise LookupError(f"backend {observed.info.backend_pid} is not in pg_stat_activity")
    return Activity(*row)


def job_row_locked(conn: psycopg.Connection, job_id: int) -> bool:
    """True if another transaction holds job `job_id`'s row lock; never waits for it.

    Without a holder the probe takes the lock itself for the length of one autocommit
    statement, which is why `conn` must be autocommit and outside any transaction.
    """
    check_autocommit_idle(conn, "job_row_locked")
    try:
        row = conn.execute(_query("try_lock_job"), {"job_id": check_int(job_id, "job_id")})
    except psycopg.errors.LockNotAvailable:
        return True
    if row.fetchone() is None:
        raise LookupError(f"no job with id {job_id}")
    return False


def vacuum_jobs(conn: psycopg.Connection) -> VacuumCounts:
    """VACUUM the jobs table; how many dead row versions it removed and how many it kept."""
    check_autocommit_idle(conn, "vacuum_jobs")  # VACUUM cannot run inside a transaction block
    messages: list[str] = []

    def collect(diagnostic: psycopg.errors.Diagnostic) -> None:
        messages.append(diagnostic.message_primary or "")

    conn.add_notice_handler(collect)
    try:
        conn.execute(_query("vacuum_jobs"))
    finally:
        conn.remove_notice_handler(collect)
    # One report for the table ("finished vacuuming "db.schema.jobs": ..."), one for its TOAST.
    found = [m for m in messages if m.startswith("finished vacuuming") and '.jobs":' in m
             and _TUPLES.search(m)]
    if not found:
        raise RuntimeError(f"VACUUM VERBOSE reported no tuple counts: {messages!r}")
    removed, kept = _TUPLES.search(found[0]).groups()
    return VacuumCounts(int(removed), int(kept))
