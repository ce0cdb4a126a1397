"""The queue's own install: its tables, types, trigger and functions (`sql/queue.sql`).

    queue.install(conn)                       # the current schema gets a queue, once
    db.reset_schema(conn, "demo", queue.install)

The queue needs only the ground floor's database clock (`cq_now()`, which `db.reset_schema`
applies first); it knows nothing of tenants' or documents' tables. The tables of the
operating modules (registry, fairness, ratelimit, outbox, checkpoints) are installed by each
module's own `install(conn)` when first used.
"""

from __future__ import annotations

import psycopg

from .. import sqlfile

__all__ = ["install", "installed"]

_QUERIES = sqlfile.load(__package__, "schema.sql")


def installed(conn: psycopg.Connection) -> bool:
    """Whether the connection's current schema has the queue's tables."""
    return bool(conn.execute(_QUERIES["installed"].sql).fetchone()[0])


def install(conn: psycopg.Connection) -> bool:
    """Create the queue in the connection's current schema unless it is there; True when
    this call created it. Safe to call from many processes at once (an advisory lock
    serialises them); works inside a caller's transaction too."""
    with conn.transaction():
        conn.execute(_QUERIES["lock"].sql)
        if installed(conn):
            return False
        conn.execute(sqlfile.read(__package__, "queue.sql"))
    return True
