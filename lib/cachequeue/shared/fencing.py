"""Fencing tokens checked where it matters, at the resource, and issued where they last.

A lock with an expiry cannot stop a paused holder from writing after its lock has expired
(see `cachequeue.shared.lock`). The resource can: it remembers the largest fencing token
that wrote it and refuses a smaller one. `fenced_write` is that check and the write in one
statement (`sql/queries.sql`), so no other writer can slip in between the two. What it
guarantees: a smaller token never overwrites a larger one. It does not stop two holders
from both writing, in token order: that is the order the lock handed them out.

The guarantee is only as good as the tokens. `Counter` issues them from a row of the same
database (`fence_counters`), incremented in a transaction that commits durably before the
token is used, so they never repeat; a counter in Redis's memory does (`lock.RedisCounter`).

`install(conn)` creates both tables (`sql/fencing.sql`) in the connection's current schema.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from .. import sqlfile
from ..checks import check_instance, check_int, check_text

__all__ = ["Counter", "fenced_read", "fenced_write", "install", "query"]

query = sqlfile.load("cachequeue.shared", "queries.sql")
"""The named statements of `sql/queries.sql`: `query("name").sql` to read, print or EXPLAIN."""


def install(conn: psycopg.Connection) -> None:
    """Create the `fenced_resources` and `fence_counters` tables in the current schema
    unless they exist."""
    conn.execute(sqlfile.read("cachequeue.shared", "fencing.sql"))


class Counter:
    """Fencing tokens from PostgreSQL: `RedisLock(client, key, ttl=..., fences=Counter(conn,
    "summary:42"))`. Each `next()` is one committed increment of the row `name` (created at
    1), with synchronous_commit on for that transaction, so a token survives a crash of
    Redis and of PostgreSQL and is never issued twice. `conn` must be an autocommit
    connection with no transaction open when `next()` runs: a token from a transaction that
    could still roll back could be issued again.
    """

    __slots__ = ("conn", "name")

    def __init__(self, conn: psycopg.Connection, name: str) -> None:
        self.conn = check_instance(conn, "conn", psycopg.Connection)
        self.name = check_text(name, "name", limit=1000)

    def next(self) -> int:
        """The next token (1, 2, 3, ...), committed before it is returned."""
        if not self.conn.autocommit or (self.conn.info.transaction_status
                                         != psycopg.pq.TransactionStatus.IDLE):
            raise ValueError("fencing.Counter needs an autocommit connection outside any "
                             "transaction (db.connect(schema)): a token from a transaction "
                             "that rolls back would be issued again")
        with self.conn.transaction():
            self.conn.execute(query("durable_commit").sql)
            return self.conn.execute(query("next_fence").sql, {"name": self.name}).fetchone()[0]

    def __repr__(self) -> str:
        return f"fencing.Counter({self.name!r})"


def fenced_write(conn: psycopg.Connection, resource: str, fence: int, value: Any) -> bool:
    """Store `value` (JSON) for `resource` if no larger fencing token has written it.

    Returns True if written, False if refused because a later lock holder (a larger
    `fence`) wrote first. The same token may write again (tokens from `Counter` are never
    given to two grants, so an equal token is the same holder). Runs as one statement: on an
    autocommit connection it commits on its own; inside `conn.transaction()` it is part
    of that transaction (and holds the row lock until it ends).
    """
    check_text(resource, "resource")
    if fence is None:
        raise TypeError("fence is None: the lock grant carries no fencing token; create the "
                        "RedisLock with fences=fencing.Counter(conn, name) (or RedisCounter())")
    check_int(fence, "fence", minimum=1)
    params = {"resource": resource, "fence": fence, "value": Jsonb(value)}
    return conn.execute(query("fenced_write").sql, params).fetchone() is not None


def fenced_read(conn: psycopg.Connection, resource: str) -> tuple[int, Any] | None:
    """(fence, value) of `resource`, or None if it was never written."""
    check_text(resource, "resource")
    row = conn.execute(query("fenced_read").sql, {"resource": resource}).fetchone()
    return None if row is None else (row[0], row[1])
