"""LoadingCache under concurrency: one test per edge case, interleavings fixed by Events.

Every test runs against LoadingCache and its subclass EarlyRefreshCache: the subclass must
keep every guarantee of the base (here its early refresh never fires, since loads take no
time on the manual clock, so both must behave identically).
"""

from __future__ import annotations

import asyncio
import gc
import random

import pytest

from cachequeue.cache import CacheBusy, EarlyRefreshCache, LoadingCache
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


@pytest.mark.parametrize("policy", ["fifo", "lru"])
def test_concurrent_misses_share_one_load(make, policy):
    cache, gate = make(policy=policy), GatedLoader("summary")

    async def scenario():
        readers = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(50)]
        await gate.started.wait()  # the load runs after all 50 readers have asked
        assert cache.pending == 1
        gate.release.set()
        return await asyncio.gather(*readers)

    assert run(scenario()) == ["summary"] * 50
    assert gate.calls == 1
    assert (cache.stats.loads, cache.stats.coalesced, cache.stats.misses) == (1, 49, 50)


def test_a_failed_load_reaches_every_waiter_and_is_not_cached(make):
    cache, gate = make(), GatedLoader(error=Boom("model down"))

    async def scenario():
        readers = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(5)]
        await gate.started.wait()
        gate.release.set()
        outcomes = await asyncio.gather(*readers, return_exceptions=True)
        assert cache.pending == 0 and len(cache) == 0
        gate.error = None  # the model is back: the next call loads again
        return outcomes, await cache.get_or_load("k", gate, ttl=5)

    outcomes, after = run(scenario())
    assert all(isinstance(o, Boom) for o in outcomes) and len({id(o) for o in outcomes}) == 1
    assert after == "v" and gate.calls == 2
    assert (cache.stats.failures, cache.stats.loads, cache.stats.coalesced) == (1, 2, 4)


def test_a_loader_that_raises_when_called_leaves_nothing_stuck(make):
    cache = make(max_pending=1)

    def broken():
        raise Boom("could not even start")

    async def scenario():
        with pytest.raises(Boom):
            await cache.get_or_load("k", broken, ttl=5)
        assert cache.pending == 0
        gate = GatedLoader("fine")
        gate.release.set()
        return await cache.get_or_load("k", gate, ttl=5)  # the single pending slot is free

    assert run(scenario()) == "fine"
    assert (cache.stats.loads, cache.stats.failures, len(cache)) == (2, 1, 1)


def test_a_loader_that_returns_no_awaitable_is_a_clear_type_error(make):
    cache = make()

    async def scenario():
        with pytest.raises(TypeError, match="awaitable"):
            await cache.get_or_load("k", lambda: "not awaitable", ttl=5)

        async def good():
            return "ok"

        return await cache.get_or_load("k", good, ttl=5)

    assert run(scenario()) == "ok"
    assert cache.pending == 0


def test_max_pending_rejects_a_new_key_at_once_but_never_a_joiner(make):
    cache, gate = make(max_pending=2), GatedLoader(expect=2)

    async def scenario():
        a = asyncio.create_task(cache.get_or_load("a", gate, ttl=5))
        b = asyncio.create_task(cache.get_or_load("b", gate, ttl=5))
        await gate.started.wait()
        with pytest.raises(CacheBusy, match="max_pending=2"):
            await cache.get_or_load("c", gate, ttl=5)  # raises without waiting for a or b
        joiners = [asyncio.create_task(cache.get_or_load("a", gate, ttl=5)) for _ in range(10)]
        gate.release.set()
        await asyncio.gather(a, b, *joiners)
        return await cache.get_or_load("c", gate, ttl=5)  # room again once loads finish

    assert run(scenario()) == "v"
    assert (cache.stats.rejected, cache.stats.coalesced, gate.calls) == (1, 10, 3)


def test_the_pending_cap_counts_failed_loads_only_while_they_run(make):
    cache, gate = make(max_pending=1), GatedLoader(error=Boom())

    async def scenario():
        first = asyncio.create_task(cache.get_or_load("a", gate, ttl=5))
        await gate.started.wait()
        with pytest.raises(CacheBusy):
            await cache.get_or_load("b", gate, ttl=5)
        gate.release.set()
        with pytest.raises(Boom):
            await first
        gate.error = None
        return await cache.get_or_load("b", gate, ttl=5)

    assert run(scenario()) == "v"


def test_cancelling_one_waiter_does_not_cancel_the_load_for_the_others(make):
    cache, gate = make(), GatedLoader("summary")

    async def scenario():
        impatient = asyncio.create_task(cache.get_or_load("k", gate, ttl=5))
        patient = asyncio.create_task(cache.get_or_load("k", gate, ttl=5))
        await gate.started.wait()
        impatient.cancel()
        with pytest.raises(asyncio.CancelledError):
            await impatient
        gate.release.set()
        return await patient

    assert run(scenario()) == "summary"
    assert gate.calls == 1 and cache.stats.failures == 0 and "k" in cache


def test_cancelling_every_waiter_still_lets_the_load_finish_and_be_stored(make):
    cache, gate = make(), GatedLoader("summary")

    async def scenario():
        waiters = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(3)]
        await gate.started.wait()
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        assert cache.pending == 1  # the cache owns the load; nobody cancelled it
        gate.release.set()
        return await cache.get_or_load("k", gate, ttl=5)

    assert run(scenario()) == "summary"
    assert gate.calls == 1 and cache.stats.hits + cache.stats.coalesced == 3


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


def test_an_expired_key_reloads_once_for_concurrent_readers(make):
    clock = ManualClock()
    cache = make(clock=clock)
    first, second = GatedLoader("v1"), GatedLoader("v2")

    async def scenario():
        first.release.set()
        assert await cache.get_or_load("k", first, ttl=1) == "v1"
        clock.advance(1)
        readers = [asyncio.create_task(cache.get_or_load("k", second, ttl=1)) for _ in range(4)]
        await second.started.wait()
        second.release.set()
        return await asyncio.gather(*readers)

    assert run(scenario()) == ["v2"] * 4
    assert second.calls == 1 and cache.stats.expired == 1


def test_ten_thousand_concurrent_misses_one_load(make):
    cache, gate = make(max_pending=1), GatedLoader("summary")

    async def scenario():
        readers = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(10_000)]
        await gate.started.wait()
        gate.release.set()
        return await asyncio.gather(*readers)

    assert run(scenario()) == ["summary"] * 10_000
    assert gate.calls == 1 and cache.stats.coalesced == 9_999
