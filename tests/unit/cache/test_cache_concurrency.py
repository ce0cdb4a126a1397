"""LoadingCache under concurrency, what only it does: one test per edge case, interleavings
fixed by Events. What every cache does under concurrency (shared loads, failures and
cancellation reaching each waiter, the cap on loads) is in the shared suite,
tests/cachebehaviour.py, run by test_cache.py.

Every test runs against LoadingCache and its subclass EarlyRefreshCache: the subclass must
keep every guarantee of the base (here its early refresh never fires, since loads take no
time on the manual clock, so both must behave identically).
"""

from __future__ import annotations

import asyncio
import gc
import random

import pytest

from cachequeue.cache import EarlyRefreshCache, LoadingCache
from cachequeue.clock import ManualClock
from cachequeue.course.probes.workload import GatedLoader


class Boom(Exception):
    pass


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(params=["LoadingCache", "EarlyRefreshCache"])
def make(request):
    """A factory of caches of the class under test, on a ManualClock unless given a clock."""

    def make(**kwargs) -> LoadingCache:
        kwargs.setdefault("clock", ManualClock())
        if request.param == "EarlyRefreshCache":
            return EarlyRefreshCache(rng=random.Random(0), **kwargs)
        return LoadingCache(**kwargs)

    return make


def test_a_failure_nobody_waits_for_is_not_reported_as_never_retrieved(make):
    reported = []

    async def scenario():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, context: reported.append(context["message"]))
        cache, gate = make(), GatedLoader(error=Boom())
        waiter = asyncio.create_task(cache.get_or_load("k", gate, ttl=5))
        await gate.started.wait()
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        gate.release.set()
        await asyncio.wait(asyncio.all_tasks() - {asyncio.current_task()})  # the load ends
        assert cache.pending == 0 and cache.stats.failures == 1 and len(cache) == 0
        gate.error = None  # drop the last reference to the error, so its task can be freed
        gc.collect()

    run(scenario())
    gc.collect()
    assert reported == []


def test_invalidate_during_a_load_keeps_its_stale_value_out_of_the_cache(make):
    cache = make()
    old, new = GatedLoader("old text"), GatedLoader("new text")

    async def scenario():
        before = asyncio.create_task(cache.get_or_load("doc", old, ttl=5))
        await old.started.wait()
        assert cache.invalidate("doc") is True  # a write happened: forget the load in flight
        after = asyncio.create_task(cache.get_or_load("doc", new, ttl=5))
        await new.started.wait()
        assert cache.pending == 2
        old.release.set()
        assert await before == "old text"  # its own waiters still get an answer
        assert "doc" not in cache  # but it is not stored
        new.release.set()
        assert await after == "new text"
        return await cache.get_or_load("doc", old, ttl=5)

    assert run(scenario()) == "new text"
    assert (old.calls, new.calls) == (1, 1)


def test_a_loader_awaiting_its_own_key_fails_instead_of_hanging(make):
    cache = make()

    async def recursive():
        return await cache.get_or_load("k", recursive, ttl=5)

    async def scenario():
        with pytest.raises(RuntimeError, match="its own key"):
            await cache.get_or_load("k", recursive, ttl=5)

    run(scenario())
    assert cache.pending == 0 and len(cache) == 0


def test_ten_thousand_concurrent_misses_one_load(make):
    cache, gate = make(max_pending=1), GatedLoader("summary")

    async def scenario():
        readers = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(10_000)]
        await gate.started.wait()
        gate.release.set()
        return await asyncio.gather(*readers)

    assert run(scenario()) == ["summary"] * 10_000
    assert gate.calls == 1 and cache.stats.coalesced == 9_999
