"""The behaviour every loading cache of the course promises, as one suite.

`await cache.get_or_load(key, loader, ttl=seconds)`: a stored value, or one shared load.
LoadingCache (in one process) and SharedCache (across processes, in Redis) keep the same
promises, so they run the same tests: tests/unit/cache/test_cache.py subclasses
`CacheBehaviour` for LoadingCache and EarlyRefreshCache under both policies,
tests/integration/shared/test_shared_cache_behaviour.py for SharedCache on the real Redis.
What only one of them does (eviction, shared or copied values, the breaker, JSON) stays
in its own tests.

A subclass provides:
- `make(**settings)`: a cache (settings: max_pending, max_ttl);
- `elapse(seconds)` (async): move the caches' time on (a ManualClock; in Redis, every key
  of the test's namespace ages by as much);
- `invalidate(cache, key)` (async): drop the stored value; True if there was one;
- `stored(cache)`: how many values the cache holds; `loading(cache)`: how many loads it
  has in flight (a SharedCache's loads hold a lock key in Redis);
- `closing()` (async, optional): close what `make` opened, inside the test's event loop.

Interleavings are fixed by GatedLoader's events; no test sleeps or reads the wall clock.
"""

from __future__ import annotations

import asyncio
import math
from decimal import Decimal

import pytest

from cachequeue.cache import CacheBusy
from cachequeue.course.probes.workload import GatedLoader


class Boom(Exception):
    pass


BAD_TTLS = [  # with max_ttl=60
    (0, ValueError), (0.0, ValueError), (-1, ValueError), (-0.001, ValueError),
    (60.000001, ValueError), (61, ValueError), (10**400, ValueError),
    (math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError),
    (True, TypeError), (False, TypeError), ("5", TypeError), (None, TypeError),
    (b"5", TypeError), ([5], TypeError), (Decimal("5"), TypeError), (5j, TypeError),
]


class Counting:
    """A loader that counts its calls and returns `prefix-<n>` for the n-th call."""

    def __init__(self, prefix: str = "value") -> None:
        self.prefix, self.calls = prefix, 0

    def __call__(self):
        self.calls += 1
        return self._load(self.calls)

    async def _load(self, n):
        return f"{self.prefix}-{n}"


async def refused_while_loading(cache, gate, other):
    """Start loading "a" through `gate` and, while it runs, ask for "b" through `other`:
    with max_pending=1 the second is refused (CacheBusy). The first load's task."""
    first = asyncio.create_task(cache.get_or_load("a", gate, ttl=5))
    await gate.started.wait()
    with pytest.raises(CacheBusy):
        await cache.get_or_load("b", other, ttl=5)
    return first


class CacheBehaviour:
    """The shared promises. Stats used: hits, loads, coalesced, failures, rejected."""

    def make(self, **settings):
        raise NotImplementedError

    async def elapse(self, seconds: float) -> None:
        raise NotImplementedError

    async def invalidate(self, cache, key: str) -> bool:
        raise NotImplementedError

    def stored(self, cache) -> int:
        raise NotImplementedError

    def loading(self, cache) -> int:
        raise NotImplementedError

    async def closing(self) -> None:
        pass

    def run(self, scenario):
        """Run `scenario()` in a fresh event loop, then `closing()` in the same loop."""
        async def main():
            try:
                return await scenario()
            finally:
                await self.closing()

        return asyncio.run(main())

    # ------------------------------------------------------------ loading and hitting

    def test_a_miss_loads_and_the_next_call_hits(self):
        cache, load = self.make(), Counting()

        async def scenario():
            return (await cache.get_or_load("k", load, ttl=5),
                    await cache.get_or_load("k", load, ttl=5))

        assert self.run(scenario) == ("value-1", "value-1")
        assert load.calls == 1 and self.stored(cache) == 1
        assert (cache.stats.hits, cache.stats.loads) == (1, 1)

    def test_none_is_a_value_like_any_other(self):
        cache, calls = self.make(), []

        async def loader():
            calls.append(1)

        async def scenario():
            return [await cache.get_or_load("k", loader, ttl=5) for _ in range(3)]

        assert self.run(scenario) == [None, None, None]
        assert len(calls) == 1 and cache.stats.hits == 2

    def test_concurrent_misses_share_one_load(self):
        cache, gate = self.make(), GatedLoader("summary")

        async def scenario():
            readers = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(50)]
            await gate.started.wait()  # the load runs after all 50 readers have asked
            assert self.loading(cache) == 1
            gate.release.set()
            return await asyncio.gather(*readers)

        assert self.run(scenario) == ["summary"] * 50
        assert gate.calls == 1
        assert (cache.stats.loads, cache.stats.coalesced) == (1, 49)

    # ------------------------------------------------------------ time

    def test_a_value_expires_after_its_ttl_and_is_loaded_again(self):
        cache, load = self.make(), Counting()

        async def scenario():
            first = await cache.get_or_load("k", load, ttl=60)
            await self.elapse(30)
            fresh = await cache.get_or_load("k", load, ttl=60)
            await self.elapse(30)
            return first, fresh, await cache.get_or_load("k", load, ttl=60)

        assert self.run(scenario) == ("value-1", "value-1", "value-2")
        assert (cache.stats.hits, cache.stats.loads) == (1, 2)

    def test_the_ttl_counts_from_when_the_value_was_stored(self):
        cache, gate = self.make(), GatedLoader("v")

        async def scenario():
            reader = asyncio.create_task(cache.get_or_load("k", gate, ttl=10))
            await gate.started.wait()
            await self.elapse(20)  # the load takes twenty seconds, twice the TTL
            gate.release.set()
            await reader
            await self.elapse(5)
            return await cache.get_or_load("k", Counting(), ttl=10)

        assert self.run(scenario) == "v"
        assert cache.stats.hits == 1

    def test_an_expired_value_is_loaded_once_for_concurrent_readers(self):
        cache = self.make()
        first, second = GatedLoader("v1"), GatedLoader("v2")

        async def scenario():
            first.release.set()
            assert await cache.get_or_load("k", first, ttl=60) == "v1"
            await self.elapse(60)
            readers = [asyncio.create_task(cache.get_or_load("k", second, ttl=60))
                       for _ in range(4)]
            await second.started.wait()
            second.release.set()
            return await asyncio.gather(*readers)

        assert self.run(scenario) == ["v2"] * 4
        assert (first.calls, second.calls, cache.stats.coalesced) == (1, 1, 3)

    # ------------------------------------------------------------ failures

    def test_a_failed_load_reaches_every_waiter_and_is_not_stored(self):
        cache, gate = self.make(), GatedLoader(error=Boom("model down"))

        async def scenario():
            readers = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(5)]
            await gate.started.wait()
            gate.release.set()
            outcomes = await asyncio.gather(*readers, return_exceptions=True)
            left = (self.stored(cache), self.loading(cache))
            gate.error = None  # the model is back: the next call loads again
            return outcomes, left, await cache.get_or_load("k", gate, ttl=5)

        outcomes, left, after = self.run(scenario)
        assert all(isinstance(o, Boom) for o in outcomes) and len({id(o) for o in outcomes}) == 1
        assert left == (0, 0), "nothing stored, nothing left loading"
        assert after == "v" and gate.calls == 2
        assert (cache.stats.failures, cache.stats.loads, cache.stats.coalesced) == (1, 2, 4)

    def test_a_loader_that_raises_when_called_leaves_nothing_stuck(self):
        cache = self.make(max_pending=1)

        def broken():
            raise Boom("could not even start")

        async def scenario():
            with pytest.raises(Boom):
                await cache.get_or_load("k", broken, ttl=5)
            assert self.loading(cache) == 0
            gate = GatedLoader("fine")
            gate.release.set()
            return await cache.get_or_load("k", gate, ttl=5)  # the single slot is free

        assert self.run(scenario) == "fine"
        assert (cache.stats.loads, cache.stats.failures, self.stored(cache)) == (2, 1, 1)

    def test_a_loader_that_returns_no_awaitable_is_a_type_error_and_leaves_nothing_stuck(self):
        cache = self.make(max_pending=1)

        async def good():
            return "ok"

        async def scenario():
            with pytest.raises(TypeError, match="await"):
                await cache.get_or_load("k", lambda: "not awaitable", ttl=5)
            return await cache.get_or_load("k", good, ttl=5)

        assert self.run(scenario) == "ok"
        assert self.loading(cache) == 0 and cache.stats.failures == 1

    @pytest.mark.parametrize(("ttl", "error"), BAD_TTLS, ids=[repr(t) for t, _ in BAD_TTLS])
    def test_a_bad_ttl_is_refused_on_a_hit_and_on_a_miss_and_changes_nothing(self, ttl, error):
        cache, load, counted = self.make(max_ttl=60), Counting(), Counting()

        async def scenario():
            await cache.get_or_load("hit", load, ttl=5)
            before = cache.stats.snapshot()
            for key in ("hit", "miss"):
                with pytest.raises(error, match="ttl"):
                    await cache.get_or_load(key, counted, ttl=ttl)
            assert cache.stats == before

        self.run(scenario)
        assert counted.calls == 0 and self.stored(cache) == 1 and self.loading(cache) == 0

    @pytest.mark.parametrize("loader", ["None", "a str", "an int", "a coroutine"])
    def test_a_loader_that_is_not_callable_is_refused(self, loader):
        cache = self.make()

        async def scenario():
            value = {"None": None, "a str": "load", "an int": 42, "a coroutine": Counting()()}
            with pytest.raises(TypeError, match="loader"):
                await cache.get_or_load("k", value[loader], ttl=5)
            value["a coroutine"].close()

        self.run(scenario)
        assert cache.stats.loads == 0 and self.stored(cache) == 0 and self.loading(cache) == 0

    # ------------------------------------------------------------ the cap on loads

    def test_max_pending_refuses_a_new_load_at_once_but_never_a_joiner(self):
        cache, gate = self.make(max_pending=2), GatedLoader(expect=2)

        async def scenario():
            a = asyncio.create_task(cache.get_or_load("a", gate, ttl=5))
            b = asyncio.create_task(cache.get_or_load("b", gate, ttl=5))
            await gate.started.wait()
            with pytest.raises(CacheBusy, match="max_pending=2"):
                await cache.get_or_load("c", gate, ttl=5)  # at once, not after a or b
            joiners = [asyncio.create_task(cache.get_or_load("a", gate, ttl=5)) for _ in range(10)]
            gate.release.set()
            await asyncio.gather(a, b, *joiners)
            return await cache.get_or_load("c", gate, ttl=5)  # room again once loads finish

        assert self.run(scenario) == "v"
        assert (cache.stats.rejected, cache.stats.coalesced, gate.calls) == (1, 10, 3)

    def test_the_cap_counts_a_failed_load_only_while_it_runs(self):
        cache, gate = self.make(max_pending=1), GatedLoader(error=Boom())

        async def scenario():
            first = await refused_while_loading(cache, gate, gate)
            gate.release.set()
            with pytest.raises(Boom):
                await first
            gate.error = None
            return await cache.get_or_load("b", gate, ttl=5)

        assert self.run(scenario) == "v"
        assert (cache.stats.rejected, cache.stats.failures, gate.calls) == (1, 1, 2)

    # ------------------------------------------------------------ cancelling and invalidating

    def test_cancelling_one_waiter_does_not_cancel_the_load_for_the_others(self):
        cache, gate = self.make(), GatedLoader("summary")

        async def scenario():
            impatient = asyncio.create_task(cache.get_or_load("k", gate, ttl=5))
            patient = asyncio.create_task(cache.get_or_load("k", gate, ttl=5))
            await gate.started.wait()
            impatient.cancel()
            with pytest.raises(asyncio.CancelledError):
                await impatient
            gate.release.set()
            return await patient

        assert self.run(scenario) == "summary"
        assert gate.calls == 1 and cache.stats.failures == 0 and self.stored(cache) == 1

    def test_cancelling_every_waiter_still_lets_the_load_finish_and_be_stored(self):
        cache, gate = self.make(), GatedLoader("summary")

        async def scenario():
            waiters = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(3)]
            await gate.started.wait()
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
            assert self.loading(cache) == 1  # the cache owns the load; nobody cancelled it
            gate.release.set()
            await gate.finished.wait()
            return await cache.get_or_load("k", gate, ttl=5)

        assert self.run(scenario) == "summary"
        assert gate.calls == 1 and cache.stats.hits + cache.stats.coalesced == 3

    def test_invalidate_drops_the_value_and_the_next_call_loads_again(self):
        cache, load = self.make(), Counting()

        async def scenario():
            await cache.get_or_load("k", load, ttl=5)
            dropped = await self.invalidate(cache, "k"), await self.invalidate(cache, "k")
            return dropped, await cache.get_or_load("k", load, ttl=5)

        assert self.run(scenario) == ((True, False), "value-2")
        assert load.calls == 2 and self.stored(cache) == 1
