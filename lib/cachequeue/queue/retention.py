"""Retention: delete finished jobs older than a policy, in bounded batches of short transactions.

A queue that keeps every finished job keeps growing: every claim and finish already leaves
dead row versions behind (each is an UPDATE), and the finished rows themselves fill the
table and its indexes. `purge` deletes the finished jobs a policy no longer keeps:

    retention.install(conn)                  # the index the purge reads, once
    report = retention.purge(conn, older_than=7 * 86400, batch_size=1000)
    report.deleted, report.batches, report.complete

Contract:
- Only finished jobs (`done`, `failed`, `cancelled`, or the subset `states` names) whose
  `finished_at` is more than `older_than` seconds before the database clock (`cq_now()`).
  A pending or running job is never deleted, whatever the arguments say.
- Each batch is one DELETE statement on an autocommit connection: its own short transaction,
  at most `batch_size` rows, oldest first. A batch holds no snapshot after it commits, so
  the purge itself never becomes the long transaction that holds the horizon back.
- Rows locked by someone else (an operator's retry moving a failed job back to pending) are
  skipped, not waited for; the state is read again on the locked row.
- At most `max_batches` batches per call; `report.complete` says whether the last batch
  found fewer than `batch_size` rows (nothing older was left when it ran).
- What is deleted goes for good: the job with its attempts, its result (`job_results`) and
  its audit rows (ON DELETE CASCADE). `jobs.status()` then answers None, the same as for a
  job that never existed (the HTTP service: 404). So `older_than` must be longer than any
  reader of a result may wait: a client polling for its result, a person reading an audit
  trail. Keep what must outlive that elsewhere (a history table, an archive) before purging.
- Deleting rows makes dead row versions too: the space is reused after VACUUM, not
  returned to the operating system (only `VACUUM FULL` or a rewrite does that, under an
  exclusive lock). Purging often in small batches keeps the table at a steady size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import psycopg

from .. import sqlfile
from ..checks import check_autocommit_idle, check_choice, check_int, check_seconds

__all__ = ["FINISHED", "MAX_BATCH", "MAX_BATCHES", "MAX_OLDER_THAN", "PurgeReport", "due",
           "install", "purge", "purge_batch", "query"]

query = sqlfile.load(__package__, "retention.sql")
"""The named statements of `sql/retention.sql`: `query("name").sql` to read, print or EXPLAIN."""

FINISHED = ("done", "failed", "cancelled")
MAX_BATCH = 10_000  # rows per DELETE: a bounded transaction
MAX_BATCHES = 100_000  # batches per call
MAX_OLDER_THAN = 100 * 365 * 86400.0  # a century, in seconds


@dataclass(frozen=True)
class PurgeReport:
    """What one purge call deleted: rows in total and by state, batches run, and whether the
    last batch was short (nothing older than the policy was left when it ran)."""

    deleted: int
    batches: int
    complete: bool
    by_state: dict[str, int] = field(default_factory=dict)


def install(conn: psycopg.Connection) -> None:
    """Create the index the purge reads (finished jobs by finish time) unless it exists.

    It costs one index entry per finished job (written by finish and fail); without it every
    batch reads the whole table."""
    with conn.transaction():
        conn.execute(query["install"].sql)


def _params(older_than: object, states: Iterable[str], batch_size: object) -> dict:
    seconds = check_seconds(older_than, "older_than", allow_zero=True, upper=MAX_OLDER_THAN)
    if isinstance(states, str):
        raise TypeError(f"states must be a collection of state names, got the str {states!r}")
    chosen = tuple(check_choice(s, "states", FINISHED) for s in states)
    if not chosen:
        raise ValueError("states must name at least one of " + ", ".join(FINISHED))
    return {"older_than": seconds, "states": list(dict.fromkeys(chosen)),
            "batch_size": check_int(batch_size, "batch_size", minimum=1, maximum=MAX_BATCH)}


def purge_batch(conn: psycopg.Connection, *, older_than: float,
                states: Iterable[str] = FINISHED, batch_size: int = 1000) -> list[tuple[int, str]]:
    """Delete one batch (one statement, its own transaction); the (id, state) of each job
    deleted, oldest first. Raises before anything is written if an argument is refused."""
    params = _params(older_than, states, batch_size)
    check_autocommit_idle(conn, "retention.purge_batch")
    return [(job_id, state) for job_id, state in
            conn.execute(query["purge_batch"].sql, params).fetchall()]


def purge(conn: psycopg.Connection, *, older_than: float, states: Iterable[str] = FINISHED,
          batch_size: int = 1000, max_batches: int = 100) -> PurgeReport:
    """Delete finished jobs older than `older_than` seconds, batch after batch, until a batch
    is short or `max_batches` ran. See the module docstring for what is (never) deleted."""
    params = _params(older_than, states, batch_size)
    limit = check_int(max_batches, "max_batches", minimum=1, maximum=MAX_BATCHES)
    check_autocommit_idle(conn, "retention.purge")
    by_state: Counter[str] = Counter()
    batches, complete = 0, False
    while batches < limit:
        rows = conn.execute(query["purge_batch"].sql, params).fetchall()
        batches += 1
        by_state.update(state for _, state in rows)
        if len(rows) < params["batch_size"]:
            complete = True
            break
    return PurgeReport(sum(by_state.values()), batches, complete, dict(by_state))


def due(conn: psycopg.Connection, *, older_than: float, states: Iterable[str] = FINISHED) -> int:
    """How many finished jobs a purge with this policy would delete now (reads only)."""
    params = _params(older_than, states, 1)
    return conn.execute(query["finished_count"].sql, params).fetchone()[0]
