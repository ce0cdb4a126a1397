"""Locks on the jobs table and what they stop: a migration, an index build, a row lock.

Chapter 08 asks what a readiness probe should check, and what a lock taken elsewhere does
to every replica at once. `migration_lock(schema)` holds the jobs table in ACCESS
EXCLUSIVE mode, as a migration does (even reads wait); `index_build_lock(schema)` holds
it in SHARE mode, as CREATE INDEX without CONCURRENTLY does (reads go on, writes and
claims wait); each on a connection of its own, for a `with` block. `writes_wait(schema)`
says whether a submit and a claim would wait now, trying each under a short lock_timeout
and rolling it back. `lock_next_job(conn)` is what the readiness probe used to run (the
claim's first step), a row lock, which gives the transaction a transaction id as a write
does (`horizon.activity` shows it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from ... import db, sqlfile
from ...checks import check_seconds
from ...queue import jobs

__all__ = ["index_build_lock", "lock_next_job", "migration_lock", "writes_wait"]

_QUERIES = sqlfile.load(__package__, "tablelocks.sql")


@contextmanager
def migration_lock(schema: str) -> Iterator[None]:
    """Hold the jobs table of `schema` exclusively, on a connection of its own, for the
    duration of the `with` block (a migration, say): every statement on jobs waits."""
    with db.connect(schema) as other, other.transaction():
        other.execute(_QUERIES["lock_jobs"].sql)
        yield


@contextmanager
def index_build_lock(schema: str) -> Iterator[None]:
    """Hold the jobs table of `schema` in SHARE mode, as CREATE INDEX (without CONCURRENTLY)
    does, on a connection of its own, for the `with` block: reads go on, while claims,
    submits and every other write on jobs wait."""
    with db.connect(schema) as other, other.transaction():
        other.execute(_QUERIES["lock_jobs_share"].sql)
        yield


def lock_next_job(conn: psycopg.Connection) -> int | None:
    """Lock the next runnable job FOR UPDATE SKIP LOCKED, as the claim's first step (and the
    readiness probe of old) did, in the caller's transaction; its id, None if none."""
    row = conn.execute(_QUERIES["lock_next_job"].sql).fetchone()
    return None if row is None else row[0]


def writes_wait(schema: str, *, timeout: float = 0.1) -> dict[str, bool]:
    """Whether a submit and a claim on the jobs of `schema` have to wait for a lock now.
    Each is tried on a connection of its own that gives up after `timeout` seconds
    (lock_timeout), in a transaction that is rolled back: nothing waits longer, and
    nothing is written either way."""
    ms = str(max(1, int(check_seconds(timeout, "timeout", upper=60.0) * 1000)))
    waited = {}
    with db.connect(schema) as other:
        other.execute(_QUERIES["lock_timeout"].sql, {"ms": ms})
        for name, write in (("submit", lambda: jobs.submit(other, tenant_id=1, kind="noop",
                                                           payload={})),
                            ("claim", lambda: jobs.claim(other))):
            try:
                with other.transaction(force_rollback=True):
                    write()
                waited[name] = False
            except psycopg.errors.LockNotAvailable:
                waited[name] = True
    return waited
