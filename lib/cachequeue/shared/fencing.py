"""Fencing tokens checked where it matters: at the resource, in one PostgreSQL statement.

A lock with an expiry cannot stop a paused holder from writing after its lock has expired
(see `cachequeue.shared.lock`). The resource can: it remembers the largest fencing token
that wrote it and refuses a smaller one. `fenced_write` is that check and the write in one
statement (`sql/queries.sql`), so no other writer can slip in between the two.

`install(conn)` creates its table (`sql/fencing.sql`) in the connection's current schema.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .. import sqlfile
from ..checks import check_int, check_text

__all__ = ["fenced_read", "fenced_write", "install", "query"]

_QUERIES = sqlfile.load("cachequeue.shared", "queries.sql")


def query(name: str) -> sqlfile.Query:
    """A named statement of this module, e.g. `query("fenced_write").sql`, to read."""
    return _QUERIES[name]


def install(conn: psycopg.Connection) -> None:
    """Create the `fenced_resources` table in the current schema unless it exists."""
    conn.execute(sqlfile.read("cachequeue.shared", "fencing.sql"))


def fenced_write(conn: psycopg.Connection, resource: str, fence: int, value: Any) -> bool:
    """Store `value` (JSON) for `resource` if no larger fencing token has written it.

    Returns True if written, False if refused because a later lock holder (a larger
    `fence`) wrote first. The same token may write again. Runs as one statement: on an
    autocommit connection it commits on its own; inside `conn.transaction()` it is part
    of that transaction (and holds the row lock until it ends).
    """
    check_text(resource, "resource")
    check_int(fence, "fence", minimum=1)
    params = {"resource": resource, "fence": fence, "value": Jsonb(value)}
    return conn.execute(_QUERIES["fenced_write"].sql, params).fetchone() is not None


def fenced_read(conn: psycopg.Connection, resource: str) -> tuple[int, Any] | None:
    """(fence, value) of `resource`, or None if it was never written."""
    check_text(resource, "resource")
    row = conn.execute(_QUERIES["fenced_read"].sql, {"resource": resource}).fetchone()
    return None if row is None else (row[0], row[1])
