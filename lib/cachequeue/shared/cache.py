"""A cache in Redis, shared by processes: one load per key across them, and a fallback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import redis
import redis.asyncio

from ..cache.flight import Flight
from ..cache.loading import CacheBusy
from ..checks import check_callable, check_instance, check_int, check_seconds, check_text
from ..errors import CacheQueueError
from .client import check_namespace
from .lock import RELEASE_SCRIPT, milliseconds

__all__ = ["SharedCache", "SharedCacheTimeout", "SharedStats"]


class SharedCacheTimeout(CacheQueueError):
    """Another process has been loading this key for longer than `wait_timeout`."""


class _RedisFailed(Exception):
    """Internal: a Redis call failed; the cache answers without Redis instead."""


@dataclass(slots=True)
class SharedStats:
    """Counters of one process's SharedCache since it was made.

    requests: calls of get_or_load. coalesced: calls that joined a lookup already running
    in this process (each key has at most one per process). hits: lookups answered by a
    value in Redis. waits: lookups that found another process loading the key and waited
    for it. loads: loader calls, shared or degraded. failures: loads that raised.
    rejected: lookups refused with CacheBusy (max_pending loads already running here).
    timeouts: waits that gave up (SharedCacheTimeout). degraded: lookups answered without
    Redis. redis_errors: Redis calls that failed (each one opens the breaker).
    """

    requests: int = 0
    coalesced: int = 0
    hits: int = 0
    waits: int = 0
    loads: int = 0
    failures: int = 0
    rejected: int = 0
    timeouts: int = 0
    degraded: int = 0
    redis_errors: int = 0

    def snapshot(self) -> SharedStats:
        return replace(self)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class SharedCache:
    """`await cache.get_or_load(key, loader, ttl=seconds)` with the value kept in Redis.

    Contract (tests/unit/test_shared_cache.py, tests/integration/test_shared_redis.py):

    - Values are JSON, stored under `namespace + "v:" + key` with `SET NX PX`: once written,
      a value is never replaced (a new version of a result is a new key, `cache_key`), only
      expired or `invalidate`d. Every caller gets its own decoded copy, so no caller can
      change what another one reads.
    - One lookup per key per process (in-process coalescing); across processes, one load per
      key: the loading process holds `namespace + "load:" + key` (SET NX PX for
      `load_timeout`), the others poll for the value (2 ms, doubling to 50 ms) until it
      appears or `wait_timeout` passes (SharedCacheTimeout). If the loader fails or its
      process dies, the lock goes (released, or expired) and a waiting process loads.
      A load slower than `load_timeout` lets another process load too; the first value
      written stays, and both answer with it.
    - At most `max_pending` loads run in this process; a lookup that would start another
      raises `CacheBusy` at once, with or without Redis.
    - Degradation: a Redis error or a reply slower than the client's timeout makes this
      lookup, and every lookup for the next `retry_after` seconds (read on `clock`), go
      straight to the loader, still coalesced per key and capped by `max_pending`: answers
      keep coming, none waits longer than one timeout, and a dead server is asked once per
      `retry_after`, not once per request. Values loaded meanwhile are not stored.
    """

    def __init__(
        self,
        client: redis.asyncio.Redis,
        *,
        namespace: str,
        max_pending: int = 20,
        max_ttl: float = 3600.0,
        load_timeout: float = 30.0,
        wait_timeout: float | None = None,
        retry_after: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = check_instance(client, "client", redis.asyncio.Redis)
        self._prefix = check_namespace(namespace)
        self._max_pending = check_int(max_pending, "max_pending", minimum=1)
        self._max_ttl = check_seconds(max_ttl, "max_ttl")
        self._load_ms = milliseconds(check_seconds(load_timeout, "load_timeout"))
        self._wait = check_seconds(load_timeout if wait_timeout is None else wait_timeout,
                                   "wait_timeout")
        self._retry_after = check_seconds(retry_after, "retry_after", allow_zero=True)
        self._clock = check_callable(clock, "clock", "callable like time.monotonic")
        self._release = client.register_script(RELEASE_SCRIPT)
        self._flights: dict[str, Flight] = {}
        self._loading = 0
        self._down_until = -float("inf")
        self.last_error: BaseException | None = None
        self.stats = SharedStats()

    client = property(lambda self: self._client, doc="The redis.asyncio client it uses.")
    namespace = property(lambda self: self._prefix, doc="The prefix of every key it writes.")

    @property
    def available(self) -> bool:
        """False while the breaker is open (Redis failed less than `retry_after` ago)."""
        return self._clock() >= self._down_until

    def value_key(self, key: str) -> str:
        """The Redis key that holds the value of `key`."""
        return f"{self._prefix}v:{key}"

    async def get_or_load(self, key: str, loader: Callable[[], Awaitable[Any]], *,
                          ttl: float) -> Any:
        """The value of `key` from Redis, else the result of one `loader()` (stored for
        `ttl` seconds, 0 < ttl <= max_ttl) shared with every process that asks meanwhile."""
        check_text(key, "key", limit=1000)
        check_callable(loader, "loader", "a zero-argument callable returning an awaitable")
        ttl = check_seconds(ttl, "ttl", upper=self._max_ttl, upper_name="max_ttl")
        self.stats.requests += 1
        flight = self._flights.get(key)
        if flight is not None:
            self.stats.coalesced += 1
        else:
            flight = self._flights[key] = Flight()
            flight.task = asyncio.get_running_loop().create_task(self._lookup(key, loader, ttl))
            flight.task.add_done_callback(lambda task: self._settle(key, flight, task))
        return json.loads(await flight.join())  # a copy of its own for every caller

    def _settle(self, key: str, flight: Flight, task: asyncio.Task) -> None:
        if self._flights.get(key) is flight:  # the next lookup of key asks Redis again
            del self._flights[key]
        flight.settle(task)

    async def invalidate(self, key: str) -> bool:
        """Delete the stored value of `key`; True if there was one."""
        return bool(await self._client.delete(self.value_key(check_text(key, "key", limit=1000))))

    async def _redis(self, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except redis.RedisError as error:
            self.stats.redis_errors += 1
            self.last_error = error
            self._down_until = self._clock() + self._retry_after
            raise _RedisFailed from error

    async def _lookup(self, key: str, loader, ttl: float) -> str:
        """The JSON text of the value: from Redis, from another process's load, or loaded."""
        if not self.available:
            return await self._degraded(loader)
        value_key, lock_key = self.value_key(key), f"{self._prefix}load:{key}"
        deadline = time.monotonic() + self._wait
        pause, waited = 0.002, False
        try:
            while True:
                text, holder = await self._redis(self._client.mget(value_key, lock_key))
                if text is not None:
                    if not waited:
                        self.stats.hits += 1
                    return text
                if holder is None:
                    owner = secrets.token_hex(16)
                    self._check_room()
                    if await self._redis(self._client.set(lock_key, owner, nx=True,
                                                          px=self._load_ms)):
                        return await self._load_and_store(value_key, lock_key, owner, loader, ttl)
                    continue  # another process took the lock in between: look again
                if not waited:
                    waited = True
                    self.stats.waits += 1
                if time.monotonic() >= deadline:
                    self.stats.timeouts += 1
                    raise SharedCacheTimeout(f"{key!r} has been loading elsewhere for more "
                                             f"than {self._wait:g} s")
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.05)
        except _RedisFailed:
            return await self._degraded(loader)

    def _check_room(self) -> None:
        if self._loading >= self._max_pending:
            self.stats.rejected += 1
            raise CacheBusy(f"{self._loading} loads in flight (max_pending={self._max_pending})")

    async def _load(self, loader) -> str:
        self._check_room()
        self._loading += 1
        self.stats.loads += 1
        try:
            value = await loader()
            return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except BaseException:
            self.stats.failures += 1
            raise
        finally:
            self._loading -= 1

    async def _load_and_store(self, value_key, lock_key, owner, loader, ttl) -> str:
        try:
            text = await self._load(loader)
        except BaseException:
            # Let a waiting process load now instead of waiting for the lock to expire.
            with contextlib.suppress(_RedisFailed):
                await self._redis(self._release(keys=[lock_key], args=[owner]))
            raise
        try:
            if not await self._redis(self._client.set(value_key, text, nx=True,
                                                      px=milliseconds(ttl))):
                # Written meanwhile (our lock had expired): the first value stays, and we
                # answer with it, as every other reader does.
                text = await self._redis(self._client.get(value_key)) or text
            await self._redis(self._release(keys=[lock_key], args=[owner]))
        except _RedisFailed:
            self.stats.degraded += 1  # loaded, but not stored: still a correct answer
        return text

    async def _degraded(self, loader) -> str:
        text = await self._load(loader)
        self.stats.degraded += 1
        return text

    def __repr__(self) -> str:
        return (f"SharedCache({self._prefix!r}, loading={self._loading}/{self._max_pending}, "
                f"{'available' if self.available else 'degraded'})")
