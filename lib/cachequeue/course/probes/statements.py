"""Watch the statements a function sends on one psycopg connection, and open the gap
between two of them on purpose.

Two exercise checks need to know how a learner's function talks to the database, not only
what it returns:

- chapter 03's `claim_one` must claim in ONE statement: `recording(conn)` lists every
  statement sent through a cursor of `conn` (`conn.execute`, `cursor.execute`,
  `cursor.executemany`) while the block runs, so the check can count them;
- chapter 06's `send_receipt` must stay right when two runs of a job race: `gap(conn,
  other)` runs `other()` (the second run, on another connection) just before `conn` sends
  its second statement, which is exactly where a read-then-write answer is exposed; an
  answer of one statement has no such gap, and `other()` runs right after it instead.

Both swap the connection's `cursor_factory` for a subclass for the duration of the block
and put the original back afterwards; nothing else about the connection changes.
`BEGIN`/`COMMIT` sent by `conn.transaction()` are not statements of the function and are
not listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from ...checks import check_callable, check_instance

__all__ = ["Gap", "gap", "recording"]


def _text(query: Any, conn: psycopg.Connection) -> str:
    if isinstance(query, sql.Composable):
        return query.as_string(conn)
    if isinstance(query, bytes):
        return query.decode("utf-8", "replace")
    return " ".join(str(query).split())


@contextmanager
def _watched(conn: psycopg.Connection, before: Callable[[list[str]], None]) -> Iterator[list[str]]:
    """Call `before(seen)` ahead of every statement `conn` sends, then append its text."""
    check_instance(conn, "conn", psycopg.Connection)
    seen: list[str] = []
    original = conn.cursor_factory

    class Watched(original):  # type: ignore[misc, valid-type]
        def execute(self, query, params=None, **kwargs):
            before(seen)
            seen.append(_text(query, conn))
            return super().execute(query, params, **kwargs)

        def executemany(self, query, params_seq, **kwargs):
            before(seen)
            seen.append(_text(query, conn))
            return super().executemany(query, params_seq, **kwargs)

    conn.cursor_factory = Watched
    try:
        yield seen
    finally:
        conn.cursor_factory = original


@contextmanager
def recording(conn: psycopg.Connection) -> Iterator[list[str]]:
    """`with recording(conn) as sent:` ... `sent` lists the statements `conn` sent in the
    block, in order, whitespace collapsed."""
    with _watched(conn, lambda seen: None) as seen:
        yield seen


@dataclass
class Gap:
    """What `gap` saw: the statements of the watched connection, whether `other()` ran
    between the first and the second of them, and what `other()` returned."""

    statements: list[str] = field(default_factory=list)
    in_between: bool = False
    result: Any = None


@contextmanager
def gap(conn: psycopg.Connection, other: Callable[[], Any]) -> Iterator[Gap]:
    """`with gap(conn, other) as seen:` ... runs `other()` once: just before `conn` sends
    its second statement in the block (`seen.in_between` is True), or, if `conn` sent
    fewer than two, right after the block. `seen.result` is what `other()` returned.

    `other` must use another connection: it runs while `conn` is between two statements,
    and inside a transaction of `conn` it may wait for that transaction's locks."""
    check_callable(other, "other", "a zero-argument callable (the racing call)")
    seen = Gap()

    def before(statements: list[str]) -> None:
        if len(statements) == 1 and not seen.in_between:
            seen.in_between = True
            seen.result = other()

    with _watched(conn, before) as statements:
        seen.statements = statements
        yield seen
    if not seen.in_between:
        seen.result = other()
