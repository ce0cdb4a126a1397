"""A bounded asyncio loading cache: TTL, capacity, request coalescing and a cap on loads."""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..checks import check_callable, check_choice, check_int, check_seconds
from ..errors import CacheQueueError
from .flight import Flight

__all__ = ["CacheBusy", "CacheStats", "LoadingCache", "NotFound", "POLICIES"]

POLICIES = ("fifo", "lru")
_NEVER = -math.inf  # the hit test of a negative entry: no reading is ever earlier than this


class CacheBusy(CacheQueueError):
    """A miss needed a new load, but `max_pending` loads are already in flight: try later."""


class NotFound(CacheQueueError):
    """Raised by a loader for "no such item". Cached only with `negative_ttl` (opt-in)."""


@dataclass(slots=True)
class CacheStats:
    """Counters since the cache was made. Invariant: misses == loads + coalesced + rejected.

    hits: served a fresh stored value. misses: found no fresh value. loads: loader calls.
    coalesced: misses that joined a load already in flight. rejected: misses refused with
    CacheBusy. failures: loads that raised (nothing stored). evictions: entries dropped for
    capacity. expired: entries dropped because their TTL ran out. negative_hits: calls
    answered NotFound from a cached "not found" (counted in neither hits nor misses).
    """

    hits: int = 0
    misses: int = 0
    loads: int = 0
    coalesced: int = 0
    rejected: int = 0
    failures: int = 0
    evictions: int = 0
    expired: int = 0
    negative_hits: int = 0

    @property
    def hit_ratio(self) -> float:
        """hits / (hits + misses), or 0.0 before the first lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0

    def snapshot(self) -> CacheStats:
        """A frozen-in-time copy, to compare before and after."""
        return replace(self)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class LoadingCache:
    """`await cache.get_or_load(key, loader, ttl=seconds)`: a stored value or one shared load.

    Contract (each point has a test in tests/unit/test_cache*.py):

    - A fresh entry is returned as is; callers share that object and must not mutate it
      (store immutable values: str, tuple, frozen dataclass).
    - Concurrent misses of one key share one call of `loader` (a zero-argument callable
      returning an awaitable). Its value, or its exception, reaches every waiter.
    - A failed load stores nothing and releases the key (in `finally`), so the next call
      loads again. Only `NotFound` is remembered, and only when `negative_ttl` is set.
    - At most `max_pending` loads run at once; a miss that would start another raises
      `CacheBusy` at once. Joining a load already in flight is never refused.
    - The load is a task owned by the cache: cancelling a waiter never cancels it.
    - `len(cache) <= max_entries` always. `policy="fifo"` evicts the oldest insertion,
      `"lru"` the least recently read; the two differ in one line (a hit moves the key).
    - TTLs are seconds, 0 < ttl <= max_ttl; bool, NaN, inf and non-numbers are refused
      before anything changes. Expired entries are dropped when a value is inserted
      and by `purge_expired()`; until then `len()` still counts them.
    - A TTL bounds the age of a value, not its consistency with a later write: a write
      elsewhere is not seen until the entry expires or is invalidated.
    - `invalidate(key)` drops the entry and forgets a load in flight: that load still answers
      its own waiters, but its value (read before the invalidation) is not stored.

    The policy is a flag read on the hit path rather than a method each policy overrides:
    a method call there would cost about a tenth of a hit. Probabilistic early refresh is a
    separate subclass, `cachequeue.xfetch.EarlyRefreshCache`, so this hit path pays nothing.
    """

    __slots__ = ("_clock", "_data", "_flights", "_lru", "_max_entries", "_max_pending",
                 "_max_ttl", "_negative_ttl", "_next_expiry", "_running", "_stats")

    def __init__(
        self,
        *,
        max_entries: int = 100,
        max_pending: int = 20,
        max_ttl: float = 60.0,
        policy: str = "fifo",
        clock: Callable[[], float] = time.monotonic,
        negative_ttl: float | None = None,
    ) -> None:
        self._max_entries = check_int(max_entries, "max_entries", minimum=1)
        self._max_pending = check_int(max_pending, "max_pending", minimum=1)
        self._max_ttl = check_seconds(max_ttl, "max_ttl")
        check_choice(policy, "policy", POLICIES)
        check_callable(clock, "clock", "callable like time.monotonic")
        self._negative_ttl = (
            None if negative_ttl is None else self.check_ttl(negative_ttl, "negative_ttl")
        )
        self._lru = policy == "lru"
        self._clock = clock
        # key -> (value, fresh_until) or, for a cached NotFound, (error, _NEVER, absent_until).
        # Order is eviction order: insertion (fifo) or last read (lru). entry[-1] is the expiry.
        self._data: OrderedDict[Hashable, tuple] = OrderedDict()
        self._flights: dict[Hashable, Flight] = {}  # key -> the load new misses join
        self._running = 0  # loads in flight, including forgotten ones; capped by max_pending
        self._next_expiry = math.inf  # lower bound of every entry's expiry
        self._stats = CacheStats()

    policy = property(lambda self: "lru" if self._lru else "fifo")
    max_entries = property(lambda self: self._max_entries)
    max_pending = property(lambda self: self._max_pending)
    max_ttl = property(lambda self: self._max_ttl)
    negative_ttl = property(lambda self: self._negative_ttl)

    @property
    def stats(self) -> CacheStats:
        """The live counters (read them; `stats.snapshot()` copies)."""
        return self._stats

    @property
    def pending(self) -> int:
        """Loads in flight now."""
        return self._running

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        """Whether an entry (fresh or not yet purged) is held; changes no order or counter."""
        return key in self._data

    def keys(self) -> list[Hashable]:
        """Held keys in eviction order: the first one goes first."""
        return list(self._data)

    def check_ttl(self, ttl: Any, name: str = "ttl") -> float:
        """`ttl` as float seconds if this cache accepts it (0 < ttl <= max_ttl), else a
        TypeError (not a real number, or a bool) or ValueError (NaN, inf, out of range)."""
        return check_seconds(ttl, name, upper=self._max_ttl, upper_name="max_ttl")

    def __repr__(self) -> str:
        return (f"LoadingCache(policy={self.policy!r}, entries={len(self._data)}/"
                f"{self._max_entries}, pending={self._running}/{self._max_pending})")

    async def get_or_load(
        self, key: Hashable, loader: Callable[[], Awaitable[Any]], *, ttl: float
    ) -> Any:
        """The fresh value for `key`, else the result of one shared `loader()` stored for `ttl`."""
        # Hit path, kept short on purpose: validate, look up, count, return.
        cls = ttl.__class__
        if not ((cls is float or cls is int) and 0 < ttl <= self._max_ttl):
            ttl = self.check_ttl(ttl)
        if not callable(loader):
            check_callable(loader, "loader", "a zero-argument callable")
        entry = self._data.get(key)
        if entry is not None and entry[1] > self._clock():
            self._stats.hits += 1
            if self._lru:
                self._data.move_to_end(key)  # the whole LRU policy
            return entry[0]
        return await self._miss(key, loader, ttl, entry)

    async def _miss(self, key, loader, ttl, entry):
        stats = self._stats
        if entry is not None:
            if len(entry) == 3 and entry[2] > self._clock():
                stats.negative_hits += 1
                raise NotFound(*entry[0].args)
            del self._data[key]  # expired: never served again, so do not keep it
            stats.expired += 1
        flight = self._flights.get(key)
        if flight is not None:
            if flight.task is asyncio.current_task():
                raise RuntimeError(f"the loader for {key!r} awaits its own key: it would wait forever")
            stats.misses += 1
            stats.coalesced += 1
            return await flight.join()
        stats.misses += 1
        if self._running >= self._max_pending:
            stats.rejected += 1
            raise CacheBusy(f"{self._running} loads in flight (max_pending={self._max_pending}); "
                            f"not starting one for {key!r}")
        return await self._start(key, loader, ttl).join()

    def _start(self, key, loader, ttl) -> Flight:
        """Call `loader` and register its load as the flight of `key` (the caller checked room)."""
        self._stats.loads += 1
        try:
            awaitable = loader()
            if not inspect.isawaitable(awaitable):
                raise TypeError(f"loader() must return an awaitable, got {type(awaitable).__name__}")
        except BaseException:
            self._stats.failures += 1
            raise
        # Registered before the loader first runs, so every later miss finds this flight.
        self._running += 1
        flight = self._flights[key] = Flight()
        flight.task = asyncio.get_running_loop().create_task(self._load(key, awaitable, ttl, flight))
        flight.task.add_done_callback(flight.settle)
        return flight

    async def _load(self, key, awaitable, ttl, flight):
        try:
            value = await awaitable
        except NotFound as error:
            if self._negative_ttl is None:
                self._stats.failures += 1
            elif self._flights.get(key) is flight:
                self._insert(key, (error, _NEVER, self._clock() + self._negative_ttl))
            raise
        except BaseException:
            self._stats.failures += 1
            raise
        else:
            if self._flights.get(key) is flight:  # not forgotten by invalidate()
                self._insert(key, (value, self._clock() + ttl))
            return value
        finally:
            # Release in every case (singleflight): a failure never leaves the key stuck.
            self._running -= 1
            if self._flights.get(key) is flight:
                del self._flights[key]

    def _insert(self, key, entry) -> None:
        data = self._data
        data.pop(key, None)  # a replaced key goes to the back under both policies
        now = self._clock()
        if now >= self._next_expiry:
            self.purge_expired()
        while len(data) >= self._max_entries:
            data.popitem(last=False)
            self._stats.evictions += 1
        data[key] = entry
        self._next_expiry = min(self._next_expiry, entry[-1])

    def invalidate(self, key: Hashable) -> bool:
        """Drop `key`'s entry and forget its load in flight; True if there was either."""
        held = self._data.pop(key, None) is not None
        return self._flights.pop(key, None) is not None or held

    def purge_expired(self) -> int:
        """Drop every expired entry now; return how many were dropped."""
        now = self._clock()
        data = self._data
        stale = [key for key, entry in data.items() if entry[-1] <= now]
        for key in stale:
            del data[key]
        self._stats.expired += len(stale)
        self._next_expiry = min((entry[-1] for entry in data.values()), default=math.inf)
        return len(stale)
