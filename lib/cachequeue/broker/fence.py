"""Results of broker-consumed jobs written to PostgreSQL, fenced per delivery.

JetStream's lease is `ack_wait`: when it passes without an ack (or an `in_progress`
heartbeat), the message is delivered again, and the first delivery may still be running.
There is no lease token to refuse the old one's result with, so the database keeps one:
each delivery first registers itself (`begin`: the stream sequence and the delivery count
`num_delivered` from the message's metadata), and `record` accepts a result only from the
newest registered delivery, and only once per message. A stale delivery's result is
refused (False); a delivery that finds a result already in (its ack was lost) is told
'done', so the job is never run twice to completion.

    state = fence.begin(conn, delivery)      # 'run', 'done' or 'stale'
    if state == "run":
        accepted = fence.record(conn, delivery, result)   # False: a newer delivery began

Tables (`broker_deliveries`, `broker_results`, `broker_dead_letters`) in the connection's
schema, created by `install(conn)`. SQL in `sql/broker.sql`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from .. import sqlfile
from ..checks import check_choice, check_int, check_text
from ..queue.limits import to_json

__all__ = ["BEGIN_STATES", "Delivery", "begin", "counts", "dead_letter", "dead_letters",
           "install", "record", "results"]

_QUERIES = sqlfile.load(__package__, "broker.sql")
BEGIN_STATES = ("run", "done", "stale")
REASONS = ("failed", "max_deliveries")


@dataclass(frozen=True)
class Delivery:
    """One delivery of one stream message: `seq` is its stream sequence, `delivery` its
    delivery count (1 for the first), `msg_id` its Nats-Msg-Id (or None), `kind` the job's
    kind, `worker` the consumer that holds this delivery."""

    stream: str
    seq: int
    delivery: int
    kind: str
    worker: str
    msg_id: str | None = None

    def __post_init__(self) -> None:
        check_text(self.stream, "stream")
        check_int(self.seq, "seq", minimum=1)
        check_int(self.delivery, "delivery", minimum=1)
        check_text(self.kind, "kind")
        check_text(self.worker, "worker")
        check_text(self.msg_id, "msg_id", optional=True, limit=1000)

    def params(self) -> dict[str, Any]:
        return {"stream": self.stream, "seq": self.seq, "delivery": self.delivery,
                "kind": self.kind, "worker": self.worker, "msg_id": self.msg_id}


def _check(conn: object) -> None:
    if not isinstance(conn, psycopg.Connection):
        raise TypeError(f"conn must be a psycopg.Connection, got {type(conn).__name__}")


def install(conn: psycopg.Connection) -> None:
    """Create the three tables in the connection's schema unless they exist."""
    _check(conn)
    with conn.transaction():
        conn.execute(_QUERIES["install"].sql)


def begin(conn: psycopg.Connection, delivery: Delivery) -> str:
    """Register `delivery` as its message's newest; 'run' (go on), 'done' (a result or dead
    letter is already recorded: ack, do not run) or 'stale' (a newer delivery began)."""
    _check(conn)
    if not isinstance(delivery, Delivery):
        raise TypeError(f"delivery must be a Delivery, got {type(delivery).__name__}")
    return conn.execute(_QUERIES["begin"].sql, delivery.params()).fetchone()[0]


def record(conn: psycopg.Connection, delivery: Delivery, result: Any) -> bool:
    """Write `result` (JSON) for `delivery`'s message if that delivery is still the newest
    and no result is in yet; True if it was written, False if refused (stale or done)."""
    _check(conn)
    if not isinstance(delivery, Delivery):
        raise TypeError(f"delivery must be a Delivery, got {type(delivery).__name__}")
    params = {**delivery.params(), "result": to_json(result, "result")}
    return conn.execute(_QUERIES["record"].sql, params).fetchone() is not None


def dead_letter(conn: psycopg.Connection, delivery: Delivery, *, reason: str,
                payload: Any = None, error: str | None = None) -> bool:
    """Record the message as a dead letter ('failed': its last attempt raised;
    'max_deliveries': JetStream stopped delivering it); False if one, or a result, is
    already recorded."""
    _check(conn)
    check_choice(reason, "reason", REASONS)
    check_text(error, "error", optional=True, limit=10_000)
    params = {**delivery.params(), "deliveries": delivery.delivery, "reason": reason,
              "error": error, "payload": None if payload is None else to_json(payload, "payload")}
    return conn.execute(_QUERIES["dead_letter"].sql, params).fetchone() is not None


def counts(conn: psycopg.Connection, stream: str) -> dict[str, int]:
    """{'results', 'dead_letters', 'messages' (that began), 'deliveries' (newest counts summed)}."""
    _check(conn)
    row = conn.execute(_QUERIES["counts"].sql, {"stream": check_text(stream, "stream")}).fetchone()
    return dict(zip(("results", "dead_letters", "messages", "deliveries"), map(int, row),
                    strict=True))


def results(conn: psycopg.Connection, stream: str) -> list[dict[str, Any]]:
    """The stream's results in stream order, one dict per message."""
    _check(conn)
    cur = conn.execute(_QUERIES["results"].sql, {"stream": check_text(stream, "stream")})
    names = [c.name for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def dead_letters(conn: psycopg.Connection, stream: str) -> list[dict[str, Any]]:
    """The stream's dead letters in stream order, one dict per message."""
    _check(conn)
    cur = conn.execute(_QUERIES["dead_letters"].sql, {"stream": check_text(stream, "stream")})
    names = [c.name for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
