"""Redis Streams as a job queue (chapter 13): a consumer group, its pending list, and a broker killed.

`StreamQueue` names the handful of commands a Streams queue is made of, one method each, so
the notebook can set every step beside its PostgreSQL counterpart:

    submit      XADD                     the job (its fields are the payload)
    take        XREADGROUP ... >         a new delivery to one consumer of the group
    pending     XPENDING (extended)      who holds a delivery, since when, how many deliveries
    heartbeat   XPENDING + XCLAIM JUSTID the holder claims its own entry again (idle back to 0),
                (one Lua script)         only while XPENDING still names it as the owner
    age         XCLAIM ... IDLE ms       sets an entry's idle time: the notebook's manual clock
    reclaim     XAUTOCLAIM min-idle      entries idle for at least `lease` pass to another consumer
    ack         XACK                     the entry leaves the pending list (no owner check!)
    dead_letter XADD to a second stream + XACK, in one MULTI

Redis keeps no lease token: XACK accepts any consumer's acknowledgement, and a consumer that
lost its entry to XAUTOCLAIM is not told, unless it asks: a bare `XCLAIM ... 0 ... JUSTID`
would take the entry back from its new holder and succeed, so `heartbeat` reads the owner
and claims in one script (Redis runs a script atomically), and answers False to a consumer
that lost its entry. What the result write needs beyond that is a fence
(`cachequeue.shared.fenced_write` with the delivery count), which the notebook shows.

Entries are read without decoding and decoded field by field: an entry whose fields are not
UTF-8 (anyone may XADD bytes) cannot be a Delivery, and it is already in the reader's
pending list once XREADGROUP or XAUTOCLAIM returned it, so `take` and `reclaim` dead-letter
it there and then (its bytes kept, reason "not UTF-8") and return the others.

A dead letter is the entry's fields plus `source_id`, `deliveries` and `reason`; a payload
field that has one of these names (or starts with `payload:`) is kept as `payload:<name>`,
so the metadata never overwrites the payload.

`kill_run` is the durability experiment: jobs submitted to a private server, some processed,
the server SIGKILLed and started again, on a private server that keeps nothing
(`embedded_redis.Server.private()`, as the course's embedded server) or an append-only file
(`Server.private(appendfsync="always")` or `"everysec"`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis
from redis.client import NEVER_DECODE

from ... import embedded_redis
from ...checks import check_instance, check_int, check_seconds, check_text

__all__ = ["DEAD_LETTER_FIELDS", "Delivery", "StreamQueue", "kill_run", "submit_cost"]

DEAD_LETTER_FIELDS = ("source_id", "deliveries", "reason")
_ESCAPE = "payload:"
# KEYS[1] the stream; ARGV: group, consumer, entry id. 1 if the consumer still held the
# entry (its idle time is now 0), 0 if it is not pending or another consumer holds it.
_HEARTBEAT = """
local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #held == 0 or held[1][2] ~= ARGV[2] then
    return 0
end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
"""


@dataclass(frozen=True)
class Delivery:
    """One delivery of a stream entry: its id, its fields, who holds it, and how many times
    the group has delivered it (1 on the first XREADGROUP, +1 on every XAUTOCLAIM)."""

    id: str
    payload: dict[str, str]
    consumer: str
    deliveries: int


class StreamQueue:
    """A job queue on one stream and one consumer group (created, from the start, if missing).

    `client` is a redis-py client with decoded replies (`shared.connect()`); `stream` the key
    of the stream, under the chapter's namespace; the dead letters go to `stream + ":dead"`.
    """

    def __init__(self, client: redis.Redis, stream: str, *, group: str = "workers") -> None:
        self.client = check_instance(client, "client", redis.Redis)
        self.stream = check_text(stream, "stream", limit=500)
        self.group = check_text(group, "group", limit=200)
        self.dead = stream + ":dead"
        self._heartbeat = client.register_script(_HEARTBEAT)
        try:
            client.xgroup_create(stream, group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def submit(self, **payload: str) -> str:
        """XADD: append a job; returns its entry id (the server's acknowledgement)."""
        if not payload:
            raise ValueError("payload is empty: a stream entry needs at least one field")
        return self.client.xadd(self.stream, payload)

    def take(self, consumer: str, count: int = 1) -> list[Delivery]:
        """XREADGROUP >: up to `count` entries never delivered before, now held by `consumer`
        (no blocking: an empty list when there is none)."""
        check_text(consumer, "consumer", limit=200)
        check_int(count, "count", minimum=1)
        replies = self.client.execute_command("XREADGROUP", "GROUP", self.group, consumer,
                                              "COUNT", count, "STREAMS", self.stream, ">",
                                              **{NEVER_DECODE: True})
        entries = _entries(replies[0][1] if replies else [])
        return self._decoded(entries, consumer, lambda _id: 1)

    def pending(self, entry_id: str | None = None) -> list[dict[str, Any]]:
        """XPENDING: the group's pending entries (or the one `entry_id`), each with its
        consumer, idle milliseconds and delivery count."""
        low = high = entry_id if entry_id is not None else None
        return self.client.xpending_range(self.stream, self.group, low or "-", high or "+",
                                          count=1000)

    def deliveries(self, entry_id: str) -> int:
        """How many times the group has delivered `entry_id` (0 when it is not pending)."""
        found = self.pending(entry_id)
        return found[0]["times_delivered"] if found else 0

    def heartbeat(self, consumer: str, entry_id: str) -> bool:
        """XCLAIM JUSTID by the holder itself, only if it still is the holder (XPENDING's
        owner, read in the same script): its idle time restarts at 0, its delivery count
        stays. False when the entry is no longer pending (acknowledged by someone) or
        another consumer holds it now (XAUTOCLAIM gave it away): the caller lost it."""
        check_text(consumer, "consumer", limit=200)
        check_text(entry_id, "entry_id", limit=50)
        try:
            held = self._heartbeat(keys=[self.stream], args=[self.group, consumer, entry_id])
        except redis.ResponseError as exc:
            if "Invalid stream ID" in str(exc):
                raise ValueError(f"entry_id must be a stream id like '1-0', got {entry_id!r}") from None
            raise
        return held == 1

    def age(self, entry_id: str, seconds: float) -> None:
        """Set the entry's idle time to `seconds` (XCLAIM IDLE, owner and count unchanged):
        time passing for its holder without the notebook waiting for it."""
        check_seconds(seconds, "seconds", allow_zero=True)
        owner = self.pending(entry_id)
        if not owner:
            raise ValueError(f"entry_id {entry_id!r} is not pending in group {self.group!r}")
        self.client.xclaim(self.stream, self.group, owner[0]["consumer"], 0, [entry_id],
                           idle=int(seconds * 1000), justid=True)

    def reclaim(self, consumer: str, *, lease: float) -> list[Delivery]:
        """XAUTOCLAIM: every pending entry idle for at least `lease` seconds now belongs to
        `consumer`, its delivery count one higher."""
        check_text(consumer, "consumer", limit=200)
        check_seconds(lease, "lease", allow_zero=True)
        reply = self.client.execute_command("XAUTOCLAIM", self.stream, self.group, consumer,
                                            int(lease * 1000), "0-0", "COUNT", 1000,
                                            **{NEVER_DECODE: True})
        return self._decoded(_entries(reply[1]), consumer, self.deliveries)

    def _decoded(self, entries: list[tuple[bytes, dict[bytes, bytes]]], consumer: str,
                 deliveries) -> list[Delivery]:
        """Deliveries of the entries whose fields are UTF-8; the others are dead-lettered
        at once (they are in `consumer`'s pending list already, and no Delivery can hold
        them)."""
        found = []
        for raw_id, raw_fields in entries:
            entry_id = raw_id.decode()
            try:
                fields = {k.decode(): v.decode() for k, v in raw_fields.items()}
            except UnicodeDecodeError:
                self._bury(entry_id, raw_fields, deliveries(entry_id), "a field is not UTF-8")
                continue
            found.append(Delivery(entry_id, fields, consumer, deliveries(entry_id)))
        return found

    def ack(self, entry_id: str) -> int:
        """XACK: 1 if the entry was pending and now is not, else 0. Redis does not ask who
        acknowledges: any client may acknowledge an entry another consumer holds."""
        return self.client.xack(self.stream, self.group, entry_id)

    def dead_letter(self, delivery: Delivery, reason: str) -> str:
        """Copy the entry to the dead-letter stream with its delivery count and `reason`,
        and acknowledge it, in one MULTI/EXEC; returns the dead letter's id."""
        check_instance(delivery, "delivery", Delivery)
        check_text(reason, "reason", limit=1000)
        return self._bury(delivery.id, delivery.payload, delivery.deliveries, reason)

    def _bury(self, entry_id: str, payload: dict, deliveries: int, reason: str) -> str:
        """XADD the dead letter (payload fields escaped, see the module docstring) and XACK
        the entry, in one MULTI/EXEC; the dead letter's id."""
        fields: dict[str | bytes, str | bytes] = {}
        for name, value in payload.items():
            text = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
            if text in DEAD_LETTER_FIELDS or text.startswith(_ESCAPE):
                name = (_ESCAPE.encode() + name) if isinstance(name, bytes) else _ESCAPE + name
            fields[name] = value
        fields.update({"source_id": entry_id, "deliveries": str(deliveries), "reason": reason})
        with self.client.pipeline(transaction=True) as pipe:
            pipe.xadd(self.dead, fields).xack(self.stream, self.group, entry_id)
            dead_id, _ = pipe.execute()
        return dead_id.decode() if isinstance(dead_id, bytes) else dead_id


def _entries(raw: list) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """(id, fields) pairs of an undecoded XREADGROUP/XAUTOCLAIM reply; entries deleted
    from the stream meanwhile (an id with no fields, or none at all) are left out."""
    return [(i, fields) for i, fields in (e for e in raw if e)
            if i is not None and fields is not None]


def kill_run(server: embedded_redis.Server, *, jobs: int, processed: int) -> dict[str, int]:
    """Submit `jobs` jobs to a fresh stream on `server`, let one consumer take and
    acknowledge the first `processed`, SIGKILL the server, start it again, and count.

    Returns submitted, acknowledged (XADD replies received), processed (XACKed), and after
    the restart: remaining (entries still in the stream and not acknowledged) and lost
    (acknowledged by the server, not processed, and gone)."""
    check_instance(server, "server", embedded_redis.Server)
    check_int(jobs, "jobs", minimum=1)
    check_int(processed, "processed", minimum=0, maximum=jobs)
    client = embedded_redis.client(server.url)
    queue = StreamQueue(client, "kill:jobs")
    acknowledged = [queue.submit(n=str(n)) for n in range(jobs)]
    done = {d.id for d in queue.take("worker", processed)} if processed else set()
    for entry_id in done:
        queue.ack(entry_id)
    client.close()
    server.stop("immediate")  # SIGKILL: no shutdown, no save
    server.start()
    client = embedded_redis.client(server.url)
    try:
        survivors = {i for i, _ in client.xrange("kill:jobs")}
    finally:
        client.close()
    waiting = [i for i in acknowledged if i not in done]
    remaining = sum(1 for i in waiting if i in survivors)
    return {"submitted": jobs, "acknowledged": len(acknowledged), "processed": len(done),
            "remaining": remaining, "lost": len(waiting) - remaining}


def submit_cost(server: embedded_redis.Server, *, jobs: int) -> float:
    """Seconds per XADD, one at a time (each waits for its reply), on a fresh stream of
    `server`: what a producer pays for the server's persistence setting."""
    check_instance(server, "server", embedded_redis.Server)
    check_int(jobs, "jobs", minimum=1)
    client = embedded_redis.client(server.url)
    try:
        client.delete("cost:jobs")
        started = time.perf_counter()
        for n in range(jobs):
            client.xadd("cost:jobs", {"n": str(n)})
        return (time.perf_counter() - started) / jobs
    finally:
        client.close()
