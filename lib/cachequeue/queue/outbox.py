"""The transactional outbox (Q15): the business row and its event commit together.

Publishing to a broker inside the business transaction cannot be atomic (the broker may
accept and the commit fail, or the reverse). So the event is a row of `outbox`, written by
`add()` in the same transaction as the change it announces: both commit or neither does.
A relay (`relay_once`) later claims unpublished events, publishes each, and marks them,
in the order the queue follows for jobs: claim (a short transaction that gives the events
to this relay for a lease), commit, publish with no transaction open, mark. A slow broker
then holds no lock, no snapshot and no connection slot in a transaction.

The relay can die between publishing and marking: once its lease has expired the events
are published again by the next pass. Delivery is at least once, never lost, so the
consumer drops duplicates by event id: `accept(conn, event)` inserts the id into its
`inbox` and says whether it is new; run it in the transaction of the consumer's own change,
so the change and the id commit together.

    with conn.transaction():
        ...the business change...
        outbox.add(conn, "document.updated", {"document_id": 42, "version": 4})
    outbox.relay_once(conn, publish)          # publish(Event) sends it to the broker

Tables are installed by `install(conn)` (not in a fresh chapter schema). SQL in `sql/outbox.sql`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from .. import sqlfile
from ..checks import check_callable, check_int, check_text
from .limits import check_lease, to_json

__all__ = ["Event", "accept", "add", "counts", "install", "relay_once"]

_QUERIES = sqlfile.load(__package__, "outbox.sql")


@dataclass(frozen=True)
class Event:
    """One outbox event as the relay publishes it; `event_id` is its identity for dedup."""

    id: int
    event_id: uuid.UUID
    topic: str
    payload: dict[str, Any]


def install(conn: psycopg.Connection) -> None:
    """Create the outbox and inbox tables unless they exist."""
    with conn.transaction():
        conn.execute(_QUERIES["install"].sql)


def add(conn: psycopg.Connection, topic: str, payload: dict[str, Any]) -> uuid.UUID:
    """Write an event in the caller's open transaction; returns its event id.

    Raises RuntimeError outside a transaction: an event committed on its own could announce
    a change that then rolls back, which is the failure the outbox exists to prevent.
    """
    if conn.info.transaction_status != TransactionStatus.INTRANS:
        raise RuntimeError("outbox.add() must run inside the business change's transaction "
                           "(with conn.transaction(): ...)")
    params = {"topic": check_text(topic, "topic"), "payload": to_json(payload, "payload")}
    return conn.execute(_QUERIES["add"].sql, params).fetchone()[0]


def relay_once(conn: psycopg.Connection, publish: Callable[[Event], None], *,
               limit: int = 100, lease: float = 30.0) -> int:
    """Claim up to `limit` unpublished events, publish them in order, mark them; how many.

    The claim is one statement (committed at once) that gives the events to this relay for
    `lease` seconds of the database clock: another relay skips them meanwhile. `publish`
    runs with no transaction open on `conn`, which must be an autocommit connection outside
    any transaction (RuntimeError otherwise, before anything is claimed). Then one more
    statement marks them published. If the process dies before marking, the next pass
    after the lease publishes them again (at least once). If `publish` raises, the events
    it published are marked, the others given back at once, and the error propagates.
    """
    check_callable(publish, "publish")
    params = {"limit": check_int(limit, "limit", minimum=1), "lease": check_lease(lease)}
    if not conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        raise RuntimeError("relay_once() publishes between short transactions of its own: "
                           "give it an autocommit connection with no transaction open")
    events = [Event(*row) for row in conn.execute(_QUERIES["claim"].sql, params)]
    published: list[int] = []
    try:
        for event in events:
            publish(event)
            published.append(event.id)
    finally:
        if published:
            conn.execute(_QUERIES["mark"].sql, {"ids": published})
        if len(published) < len(events):  # publish raised: the rest may go out at once
            conn.execute(_QUERIES["unclaim"].sql, {"ids": [e.id for e in events[len(published):]]})
    return len(events)


def accept(conn: psycopg.Connection, event: Event) -> bool:
    """Record `event` in the consumer's inbox: True the first time, False for a duplicate."""
    row = conn.execute(_QUERIES["accept"].sql,
                       {"event_id": event.event_id, "topic": event.topic}).fetchone()
    return row is not None


def counts(conn: psycopg.Connection) -> dict[str, int]:
    """{"written", "published", "waiting"} events of the outbox."""
    row = conn.execute(_QUERIES["counts"].sql).fetchone()
    return {"written": row[0], "published": row[1], "waiting": row[2]}
