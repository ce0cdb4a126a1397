"""Chapter 10's probes around Redis: waiting out an expiry, a write without fencing, hit costs.

- `wait_until_expired` waits, bounded, until Redis has expired a key: the notebook lets a
  lock run out for real instead of deleting it by hand.
- `unfenced_write` is the write a lock without fencing tokens relies on: last writer wins
  (`sql/redislab.sql`), to set beside `cachequeue.shared.fenced_write`.
- `hit_costs` times a hit of the in-process `LoadingCache` beside a hit of the Redis-backed
  `SharedCache`, and the two parts of the latter (the round trip, the JSON decoding).
- `counter_loss` replays Kleppmann's timeline across a Redis that loses its data: a holder
  paused past its TTL, the next holder's write, a restart of a private server that keeps
  nothing, a third holder; then who may write, with the tokens of a given fence source.
- `takeover_between` opens the gap of a two-command lock operation on purpose: just before
  a client sends its second command naming the lock's key, the hold runs out for real and
  another owner acquires it. The exercise check uses it on a learner's `extend`, which
  must check and change the lock in one step on the server.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
import redis
from psycopg.types.json import Jsonb

from ... import embedded_redis, sqlfile
from ...cache import LoadingCache
from ...checks import check_instance, check_int, check_seconds, check_text
from ...shared import RedisLock, SharedCache, fenced_write
from ...shared.client import connect

if TYPE_CHECKING:
    from ..views.fencing import FenceTrack

__all__ = ["Takeover", "counter_loss", "hit_costs", "query", "takeover_between",
           "unfenced_write", "wait_until_expired"]

query = sqlfile.load(__package__, "redislab.sql")
"""The named statements of `sql/redislab.sql`: `query("name").sql` to read, print or EXPLAIN."""


def wait_until_expired(client: redis.Redis, key: str, *, timeout: float = 5.0) -> float:
    """Wait until `key` no longer exists (Redis expired it); return the seconds waited.

    Polls every millisecond; TimeoutError if the key still exists after `timeout` seconds
    (a key without a TTL never expires, so this never waits forever)."""
    check_text(key, "key", limit=1000)
    timeout = check_seconds(timeout, "timeout")
    start = time.monotonic()
    while client.exists(key):
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{key!r} still exists after {timeout:g} s (PTTL {client.pttl(key)})")
        time.sleep(0.001)
    return time.monotonic() - start


def counter_loss(conn: psycopg.Connection, fences: Any, resource: str, *,
                 track: FenceTrack | None = None
                 ) -> tuple[tuple[int, int, int], tuple[bool, bool]]:
    """On a private Redis that keeps nothing: A acquires and pauses past its TTL (its key is
    deleted, as an expiry would), B acquires and writes `resource`, Redis restarts, C
    acquires. Then C writes, and B, whose hold went with Redis, writes once more.

    Returns ((A's, B's, C's fencing tokens), (C's write accepted, B's late write accepted)).
    `fences` is the lock's fence source (`RedisCounter()` or `fencing.Counter(...)`).
    With `track` (`course.views.fencing.FenceTrack`), each step is noted as it happens:
    the acquisitions, A's expiry, the restart (a fault), the writes and their verdicts.
    """
    check_text(resource, "resource")
    if track is not None:
        from ..views.fencing import FenceTrack  # matplotlib only when a figure is wanted

        check_instance(track, "track", FenceTrack)
    note = track or _Silent()
    with embedded_redis.Server.private() as volatile:
        client = connect(volatile.url)
        try:
            lock = RedisLock(client, "cq:lock:" + resource, ttl=30, fences=fences)
            a = lock.acquire()
            note.acquired("A", a.fence)
            client.delete(lock.key)  # A's hold expires while A is paused
            note.expired("A")
            b = lock.acquire()
            note.acquired("B", b.fence)
            if not fenced_write(conn, resource, b.fence, {"summary": "B"}):
                raise AssertionError(f"B's first write to {resource!r} was refused")
            note.wrote("B", b.fence, True)
            volatile.stop()
            volatile.start()  # no persistence: the lock and its counter are gone
            note.fault("Redis 重启")
            client.connection_pool.disconnect()  # its sockets went with the old process
            c = lock.acquire()
            note.acquired("C", c.fence)
            by_c = fenced_write(conn, resource, c.fence, {"summary": "C：现在的持有者"})
            note.wrote("C", c.fence, by_c)
            by_b = fenced_write(conn, resource, b.fence, {"summary": "B：锁已随 Redis 丢失"})
            note.wrote("B", b.fence, by_b)
        finally:
            client.close()
    return (a.fence, b.fence, c.fence), (by_c, by_b)


class _Silent:
    """A track that notes nothing (counter_loss without `track`)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


@dataclass
class Takeover:
    """What `takeover_between` saw: the commands that named the key, in order (only those
    that got a reply), and whether the key changed hands between two of them."""

    commands: list[str] = field(default_factory=list)
    taken_over: bool = False


@contextmanager
def takeover_between(client: redis.Redis, key: str, *, owner: str,
                     ttl_ms: int) -> Iterator[Takeover]:
    """`with takeover_between(client, key, owner="rival", ttl_ms=5000) as seen:` ...

    After `client` got the reply to one command naming `key` and before it sends the next
    one, the current hold on `key` runs out for real (PEXPIRE 1, then wait until Redis has
    expired it) and `owner` acquires it (SET NX PX ttl_ms), as another process would in
    that gap. It happens at most once. An operation of one command (a script) has no such
    gap and is left alone; `seen.taken_over` says whether the gap was used.

    It works by giving `client` its own `execute_command` for the block (every redis-py
    command and registered script goes through it), removed afterwards; pipelines are not
    watched."""
    check_instance(client, "client", redis.Redis)
    check_text(key, "key", limit=1000)
    check_text(owner, "owner", limit=1000)
    check_int(ttl_ms, "ttl_ms", minimum=1)
    send = client.execute_command  # the class's method: our own calls are not watched
    seen = Takeover()

    def hand_over() -> None:
        seen.taken_over = True
        send("PEXPIRE", key, 1)
        deadline = time.monotonic() + 5.0
        while send("EXISTS", key):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{key!r} did not expire")
            time.sleep(0.001)
        send("SET", key, owner, "NX", "PX", ttl_ms)

    def execute_command(*args: Any, **options: Any) -> Any:
        names_key = key in args[1:]
        if names_key and seen.commands and not seen.taken_over:
            hand_over()
        reply = send(*args, **options)
        if names_key:
            seen.commands.append(str(args[0]).upper())
        return reply

    client.execute_command = execute_command
    try:
        yield seen
    finally:
        del client.execute_command


def unfenced_write(conn: psycopg.Connection, resource: str, fence: int, value: Any) -> None:
    """Store `value` for `resource` whatever fence wrote it before (deliberately unsafe)."""
    check_text(resource, "resource")
    check_int(fence, "fence", minimum=1)
    conn.execute(query("unfenced_write").sql,
                 {"resource": resource, "fence": fence, "value": Jsonb(value)})


async def _time_calls(call, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return (time.perf_counter() - start) / n * 1e6


async def hit_costs(local: LoadingCache, shared: SharedCache, key: str, value: Any, *,
                    hits: int = 2000, repetitions: int = 5) -> dict[str, Any]:
    """Median microseconds per hit, in interleaved repetitions (A B C D A B C D ...):

    local: `LoadingCache.get_or_load` of a warm key; shared: `SharedCache.get_or_load` of a
    warm key (network round trip, JSON decoding, the in-process bookkeeping); redis_get:
    the bare `GET` of the same key on the same client; json_loads: decoding its text.
    Both caches are warmed with `value` first (a load each). Returns the medians, every
    sample, and shared / local.
    """
    check_int(hits, "hits", minimum=1)
    check_int(repetitions, "repetitions", minimum=1)

    async def load():
        return value

    await local.get_or_load(key, load, ttl=30)
    await shared.get_or_load(key, load, ttl=30)
    raw = shared.client  # the same connection pool the shared hit uses
    text = await raw.get(shared.value_key(key))
    if text is None:
        raise RuntimeError(f"{key!r} was not stored in Redis")

    async def decode():
        json.loads(text)

    contenders = {
        "local": lambda: local.get_or_load(key, load, ttl=30),
        "shared": lambda: shared.get_or_load(key, load, ttl=30),
        "redis_get": lambda: raw.get(shared.value_key(key)),
        "json_loads": decode,
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repetitions):
        for name, call in contenders.items():
            samples[name].append(await _time_calls(call, hits))
    median = {name: statistics.median(values) for name, values in samples.items()}
    return {"us_median": median, "us_all": samples, "hits": hits, "repetitions": repetitions,
            "ratio_shared_to_local": median["shared"] / median["local"]}
