"""Deterministic read workloads for the cache chapter: gated loaders and seeded read traces."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Hashable
from typing import Any

from ...cache import LoadingCache
from ...checks import check_finite, check_int
from ...clock import ManualClock
from .ttldict import TtlDict

__all__ = ["CountingCondition", "GatedLoader", "loads_for_readers", "read_trace",
           "replay_hit_ratio"]


class GatedLoader:
    """A loader (zero-argument callable) whose loads wait until `release` is set.

    `started` is set once `expect` loads are running, which is the barrier a test or
    notebook awaits before it looks at the cache. `finished` is set when a load returns or
    raises; a cache stores the value in the same step, before any waiter of `finished`
    resumes. `calls` counts loads; `error`, when set, is raised by every load after the
    release instead of returning `value`.
    """

    def __init__(self, value: Any = "v", *, expect: int = 1,
                 error: BaseException | None = None) -> None:
        check_int(expect, "expect", minimum=1)
        self.value, self.expect, self.error = value, expect, error
        self.started, self.release, self.finished = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self.calls = self.running = 0

    def __call__(self):
        self.calls += 1
        return self._load()

    async def _load(self) -> Any:
        self.running += 1
        try:
            if self.running >= self.expect:
                self.started.set()
            await self.release.wait()
            if self.error is not None:
                raise self.error
            return self.value
        finally:
            self.running -= 1
            self.finished.set()


class CountingCondition(threading.Condition):
    """A threading.Condition that counts the threads waiting on it.

    `waiting_reached(n)` returns an Event set once `n` threads have called `wait()`: the
    barrier that shows, without sleeping, that cachetools' `cached(condition=...)` made
    the other threads wait instead of calling the function.
    """

    def __init__(self) -> None:
        super().__init__()
        self.waiting = 0
        self._thresholds: list[tuple[int, threading.Event]] = []

    def waiting_reached(self, n: int) -> threading.Event:
        event = threading.Event()
        with self:
            self._thresholds.append((n, event))
            if self.waiting >= n:
                event.set()
        return event

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting += 1  # the caller holds the lock, as Condition.wait requires
        for n, event in self._thresholds:
            if self.waiting >= n:
                event.set()
        try:
            return super().wait(timeout)
        finally:
            self.waiting -= 1


async def loads_for_readers(readers: int, *, coalesce: bool) -> int:
    """How many loads `readers` concurrent readers of one cold key cause.

    Every reader asks before any load finishes (the last reader to start opens the gate),
    so the answer is exact: 1 with `LoadingCache`, `readers` with the naive `TtlDict`.
    """
    check_int(readers, "readers", minimum=1)
    cache = LoadingCache(max_pending=1) if coalesce else TtlDict()
    gate = GatedLoader("summary")
    arrived = 0

    async def reader() -> Any:
        nonlocal arrived
        arrived += 1
        if arrived == readers:
            gate.release.set()  # loads resume only after this reader has asked too
        return await cache.get_or_load("doc:42", gate, ttl=30)

    results = await asyncio.gather(*(reader() for _ in range(readers)))
    assert results == ["summary"] * readers
    return gate.calls


def read_trace(n: int, *, keys: int = 50, rate: float = 10.0, skew: float = 1.1,
               seed: int = 0) -> list[tuple[float, str]]:
    """`n` reads as (time in seconds, key): Poisson arrivals at `rate` per second, keys
    drawn with Zipf-like popularity (key i has weight 1 / (i + 1) ** skew). Same seed,
    same trace."""
    check_int(n, "n", minimum=1)
    check_int(keys, "keys", minimum=1)
    rate = check_finite(rate, "rate", above=0)
    skew = check_finite(skew, "skew", minimum=0)
    rng = random.Random(seed)
    names = [f"doc:{i}" for i in range(keys)]
    weights = [1 / (i + 1) ** skew for i in range(keys)]
    now, trace = 0.0, []
    for key in rng.choices(names, weights, k=n):
        now += rng.expovariate(rate)
        trace.append((now, key))
    return trace


async def replay_hit_ratio(trace: list[tuple[float, Hashable]], *, ttl: float,
                           max_entries: int = 100, policy: str = "fifo") -> float:
    """Replay `trace` through a fresh LoadingCache on a ManualClock; return its hit ratio.

    Loads complete instantly in simulated time, so the ratio depends only on the trace,
    the TTL, the capacity and the policy.
    """
    clock = ManualClock()
    cache = LoadingCache(max_entries=max_entries, max_ttl=max(60.0, ttl), policy=policy,
                         clock=clock)
    for at, key in trace:
        clock.advance(max(0.0, at - clock()))

        async def load(key=key):
            return key

        await cache.get_or_load(key, load, ttl=ttl)
    return cache.stats.hit_ratio
