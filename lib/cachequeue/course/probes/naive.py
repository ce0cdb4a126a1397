"""The naive read-then-update claim, in two steps a notebook can interleave by hand.

A worker that first reads the oldest pending job (`pick`) and then, in a separate
statement, marks it as its own (`take`) leaves a gap between the two. Two workers that
both read before either updates take the same job, and both believe they own it. The
one-statement claim of `cachequeue.queue.jobs` closes that gap with `FOR UPDATE SKIP LOCKED`.

The module also holds two probes the chapter uses: a pending count with and without
SKIP LOCKED (why SKIP LOCKED is wrong for reports), and the state pg_stat_activity shows
for a connection (to prove no transaction stays open during slow work).
"""

from __future__ import annotations

import uuid

import psycopg

from ... import sqlfile
from ...checks import check_int
from ...queue.limits import check_lease

__all__ = ["count_pending", "pick", "query", "session_state", "take", "take_pending"]

query = sqlfile.load(__package__, "naive.sql")
"""The named statements of `sql/naive.sql`: `query("name").sql` to read, print or EXPLAIN."""


def pick(conn: psycopg.Connection) -> int | None:
    """Step 1: the id of the oldest due pending job, read without any lock (None if none)."""
    row = conn.execute(query("naive_pick").sql).fetchone()
    return None if row is None else row[0]


def take(conn: psycopg.Connection, job_id: int, *, worker: str, lease: float = 30.0) -> uuid.UUID:
    """Step 2: mark `job_id` running for `worker` and return the new lease token.

    Deliberately wrong: it does not check that the job is still pending, so it "succeeds"
    for every worker that picked the same job.
    """
    params = {"job_id": check_int(job_id, "job_id"), "worker": worker,
              "lease": check_lease(lease)}
    row = conn.execute(query("naive_take").sql, params).fetchone()
    if row is None:
        raise LookupError(f"no job with id {job_id}")
    return row[0]


def take_pending(conn: psycopg.Connection, job_id: int, *, worker: str,
                 lease: float = 30.0) -> uuid.UUID | None:
    """Step 2 with `AND state = 'pending'`: the new lease token, or None when the job is no
    longer pending (another worker took it between this worker's two steps) or does not exist.
    Nothing is written when it answers None."""
    params = {"job_id": check_int(job_id, "job_id"), "worker": worker,
              "lease": check_lease(lease)}
    row = conn.execute(query("naive_take_pending").sql, params).fetchone()
    return None if row is None else row[0]


def count_pending(conn: psycopg.Connection, *, skip_locked: bool = False) -> int:
    """How many jobs are pending; with skip_locked=True, the (wrong) count that leaves out
    rows other transactions hold locked."""
    name = "count_pending_skip_locked" if skip_locked else "count_pending"
    return conn.execute(query(name).sql).fetchone()[0]


def session_state(observer: psycopg.Connection, observed: psycopg.Connection) -> str:
    """What pg_stat_activity, read on `observer`, says `observed`'s backend is doing:
    'idle', 'active', 'idle in transaction', ..."""
    row = observer.execute(query("session_state").sql,
                           {"pid": observed.info.backend_pid}).fetchone()
    if row is None:
        raise LookupError(f"backend {observed.info.backend_pid} is not in pg_stat_activity")
    return row[0]
