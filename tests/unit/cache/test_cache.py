"""LoadingCache: the behaviour suite every cache shares (tests/cachebehaviour.py, which
SharedCache runs too) and what only LoadingCache does (capacity, eviction, expiry on its
clock, shared values), run against both policies and both cache classes (LoadingCache and
its subclass EarlyRefreshCache), then policy-specific eviction."""

from __future__ import annotations

import asyncio
import random

import pytest
from cachebehaviour import CacheBehaviour
from cachebehaviour import Counting as Loader

from cachequeue.cache import CacheBusy, EarlyRefreshCache, LoadingCache
from cachequeue.clock import ManualClock
from cachequeue.course.probes.workload import GatedLoader as Gate


def run(coro):
    return asyncio.run(coro)


class LoadingCacheBehaviour(CacheBehaviour):
    """The shared suite (tests/cachebehaviour.py) and what only LoadingCache does, for every
    policy and every cache class. Subclasses set `policy` and may set `cache_class`."""

    policy: str
    cache_class: type[LoadingCache] = LoadingCache

    def cache(self, **kwargs) -> LoadingCache:
        kwargs.setdefault("clock", ManualClock())
        if issubclass(self.cache_class, EarlyRefreshCache):
            kwargs.setdefault("rng", random.Random(0))
        return self.cache_class(policy=self.policy, **kwargs)

    # What the shared suite asks of a cache class.
    def make(self, **settings) -> LoadingCache:
        if not hasattr(self, "clock"):
            self.clock = ManualClock()
        return self.cache(clock=self.clock, **settings)

    async def elapse(self, seconds: float) -> None:
        self.clock.advance(seconds)

    async def invalidate(self, cache, key) -> bool:
        return cache.invalidate(key)

    def stored(self, cache) -> int:
        return len(cache)

    def loading(self, cache) -> int:
        return cache.pending

    def test_policy_is_reported(self):
        assert self.cache().policy == self.policy

    def test_entry_expires_exactly_at_its_ttl(self):
        clock = ManualClock()
        cache, load = self.cache(clock=clock), Loader()

        async def scenario():
            await cache.get_or_load("k", load, ttl=2.0)
            clock.advance(1.999)
            fresh = await cache.get_or_load("k", load, ttl=2.0)
            clock.advance(0.001)
            reloaded = await cache.get_or_load("k", load, ttl=2.0)
            return fresh, reloaded

        assert run(scenario()) == ("value-1", "value-2")
        assert cache.stats.expired == 1
        assert len(cache) == 1

    def test_values_are_shared_not_copied(self):
        cache = self.cache()

        async def loader():
            return ["shared"]

        async def scenario():
            a = await cache.get_or_load("k", loader, ttl=5)
            b = await cache.get_or_load("k", loader, ttl=5)
            return a, b

        a, b = run(scenario())
        assert a is b
        a.append("mutated by caller a")
        assert b == ["shared", "mutated by caller a"]  # why callers must not mutate

    def test_size_never_exceeds_max_entries(self):
        cache, load = self.cache(max_entries=3), Loader()

        async def scenario():
            sizes = []
            for i in range(10):
                await cache.get_or_load(i, load, ttl=5)
                sizes.append(len(cache))
            return sizes

        assert run(scenario()) == [1, 2, 3, 3, 3, 3, 3, 3, 3, 3]
        assert cache.stats.evictions == 7

    def test_concurrent_completions_still_respect_the_capacity(self):
        cache, gate = self.cache(max_entries=2, max_pending=10), Gate(expect=6)

        async def scenario():
            readers = [asyncio.create_task(cache.get_or_load(i, gate, ttl=5)) for i in range(6)]
            await gate.started.wait()
            assert cache.pending == 6
            gate.release.set()
            return await asyncio.gather(*readers)

        assert run(scenario()) == ["v"] * 6
        assert len(cache) == 2 and cache.stats.evictions == 4 and cache.pending == 0

    def test_expired_entries_are_purged_on_insert(self):
        clock = ManualClock()
        cache, load = self.cache(clock=clock, max_entries=100), Loader()

        async def scenario():
            for i in range(50):
                await cache.get_or_load(i, load, ttl=1)
            assert len(cache) == 50
            clock.advance(1)
            await cache.get_or_load("new", load, ttl=1)

        run(scenario())
        assert cache.keys() == ["new"]
        assert cache.stats.expired == 50 and cache.stats.evictions == 0

    def test_purge_expired_drops_only_expired_entries(self):
        clock = ManualClock()
        cache, load = self.cache(clock=clock), Loader()

        async def scenario():
            await cache.get_or_load("short", load, ttl=1)
            await cache.get_or_load("long", load, ttl=10)

        run(scenario())
        assert cache.purge_expired() == 0
        clock.advance(1)
        assert cache.purge_expired() == 1
        assert cache.keys() == ["long"]
        clock.advance(9)
        assert cache.purge_expired() == 1 and len(cache) == 0
        assert cache.stats.expired == 2

    def test_misses_equal_loads_plus_coalesced_plus_rejected(self):
        cache, gate = self.cache(max_pending=1), Gate()

        async def scenario():
            readers = [asyncio.create_task(cache.get_or_load("a", gate, ttl=5)) for _ in range(3)]
            await gate.started.wait()
            with pytest.raises(CacheBusy):
                await cache.get_or_load("b", gate, ttl=5)
            gate.release.set()
            await asyncio.gather(*readers)
            await cache.get_or_load("a", gate, ttl=5)

        run(scenario())
        s = cache.stats
        assert s.as_dict() == {"hits": 1, "misses": 4, "loads": 1, "coalesced": 2, "rejected": 1,
                               "failures": 0, "evictions": 0, "expired": 0, "negative_hits": 0}
        assert s.misses == s.loads + s.coalesced + s.rejected
        assert s.hit_ratio == pytest.approx(1 / 5)


async def load_read_load(cache, *keys):
    """get_or_load each key in turn (ttl 5), one loader for all."""
    load = Loader()
    for key in keys:
        await cache.get_or_load(key, load, ttl=5)


class TestFifo(LoadingCacheBehaviour):
    policy = "fifo"

    def test_reading_does_not_save_the_oldest_entry(self):
        cache = self.cache(max_entries=2)
        run(load_read_load(cache, "a", "b", "a", "c"))  # the read of a is a hit FIFO ignores
        assert cache.keys() == ["b", "c"]


class TestLru(LoadingCacheBehaviour):
    policy = "lru"

    def test_reading_protects_the_entry_from_eviction(self):
        cache = self.cache(max_entries=2)
        run(load_read_load(cache, "a", "b", "a", "c"))  # a is now the most recently used
        assert cache.keys() == ["a", "c"]


class TestEarlyRefreshFifo(TestFifo):
    cache_class = EarlyRefreshCache


class TestEarlyRefreshLru(TestLru):
    cache_class = EarlyRefreshCache


def test_reloading_an_expired_key_moves_it_to_the_back():
    clock = ManualClock()
    cache, load = LoadingCache(max_entries=2, clock=clock), Loader()

    async def scenario():
        await cache.get_or_load("a", load, ttl=1)
        await cache.get_or_load("b", load, ttl=5)
        clock.advance(1)
        await cache.get_or_load("a", load, ttl=5)

    run(scenario())
    assert cache.keys() == ["b", "a"]
