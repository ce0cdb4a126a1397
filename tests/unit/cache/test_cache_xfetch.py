"""EarlyRefreshCache: XFetch's probabilistic early refresh, made deterministic with a fixed U."""

from __future__ import annotations

import asyncio
import math

import pytest

from cachequeue.cache.xfetch import EarlyRefreshCache
from cachequeue.clock import ManualClock
from cachequeue.course.probes.workload import GatedLoader


class FixedRandom:
    """Stands in for random.Random: always draws `u`."""

    def __init__(self, u: float) -> None:
        self.u = u

    def random(self) -> float:
        return self.u


def run(coro):
    return asyncio.run(coro)


async def load_taking(cache, clock, key, value, seconds, ttl=10):
    """Load `key` through `cache`; the load takes `seconds` on the manual clock."""
    gate = GatedLoader(value)
    reader = asyncio.create_task(cache.get_or_load(key, gate, ttl=ttl))
    await gate.started.wait()
    clock.advance(seconds)
    gate.release.set()
    return await reader


def test_a_hit_refreshes_only_once_expiry_is_within_delta_beta_ln():
    clock = ManualClock()
    # -ln(1 - 0.5) = ln 2, so with delta = 2 s and beta = 1 the window is 2 ln 2 = 1.386 s.
    cache = EarlyRefreshCache(clock=clock, rng=FixedRandom(0.5))
    refresh = GatedLoader("v2")

    async def scenario():
        assert await load_taking(cache, clock, "k", "v1", seconds=2) == "v1"  # expires at 12
        clock.advance(8)  # t = 10: 2 s left, outside the window
        assert await cache.get_or_load("k", refresh, ttl=10) == "v1"
        assert cache.refreshes == 0 and refresh.calls == 0
        clock.advance(0.7)  # t = 10.7: 1.3 s left, inside the window
        assert await cache.get_or_load("k", refresh, ttl=10) == "v1"  # served at once
        assert cache.refreshes == 1 and cache.pending == 1
        await refresh.started.wait()
        refresh.release.set()
        await asyncio.wait(asyncio.all_tasks() - {asyncio.current_task()})
        clock.advance(1.3)  # t = 12: the old entry would have expired now
        return await cache.get_or_load("k", refresh, ttl=10)

    assert run(scenario()) == "v2"
    assert refresh.calls == 1 and cache.stats.misses == 1 and cache.stats.loads == 2


def read_just_before_expiry(u, load_seconds):
    """A 10 s entry whose load took `load_seconds`, read at 9.999 s with the draw `u`:
    (what the read returned, how many early refreshes the cache started)."""
    clock = ManualClock()
    cache = EarlyRefreshCache(clock=clock, rng=FixedRandom(u))

    async def scenario():
        await load_taking(cache, clock, "k", "v1", seconds=load_seconds)
        clock.advance(9.999)
        return await cache.get_or_load("k", GatedLoader("v2"), ttl=10)

    return run(scenario()), cache.refreshes


def test_u_zero_never_refreshes_early():
    assert read_just_before_expiry(0.0, load_seconds=5) == ("v1", 0)


def test_an_instant_load_gives_no_early_refresh():
    assert read_just_before_expiry(0.999, load_seconds=0) == ("v1", 0)


def test_one_refresh_in_flight_per_key():
    clock = ManualClock()
    cache = EarlyRefreshCache(clock=clock, rng=FixedRandom(0.999))
    refresh = GatedLoader("v2")

    async def scenario():
        await load_taking(cache, clock, "k", "v1", seconds=1)
        clock.advance(5)
        hits = [await cache.get_or_load("k", refresh, ttl=10) for _ in range(10)]
        assert cache.refreshes == 1 and cache.pending == 1
        await refresh.started.wait()
        refresh.release.set()
        await asyncio.wait(asyncio.all_tasks() - {asyncio.current_task()})
        return hits, await cache.get_or_load("k", refresh, ttl=10)

    hits, after = run(scenario())
    assert hits == ["v1"] * 10 and after == "v2" and refresh.calls == 1


def test_no_refresh_when_max_pending_is_reached():
    clock = ManualClock()
    cache = EarlyRefreshCache(clock=clock, rng=FixedRandom(0.999), max_pending=1)
    blocker = GatedLoader("x")

    async def scenario():
        await load_taking(cache, clock, "k", "v1", seconds=1)
        clock.advance(5)
        other = asyncio.create_task(cache.get_or_load("other", blocker, ttl=10))
        await blocker.started.wait()  # the only pending slot is taken
        value = await cache.get_or_load("k", GatedLoader("v2"), ttl=10)
        blocker.release.set()
        await other
        return value

    assert run(scenario()) == "v1"
    assert cache.refreshes == 0 and cache.stats.rejected == 0


class Boom(Exception):
    pass


def test_a_failed_refresh_keeps_the_current_value_and_leaves_nothing_stuck():
    clock = ManualClock()
    cache = EarlyRefreshCache(clock=clock, rng=FixedRandom(0.999))
    failing = GatedLoader(error=Boom())

    async def scenario():
        await load_taking(cache, clock, "k", "v1", seconds=1)
        clock.advance(5)
        assert await cache.get_or_load("k", failing, ttl=10) == "v1"
        failing.release.set()
        await asyncio.wait(asyncio.all_tasks() - {asyncio.current_task()})
        assert cache.pending == 0 and cache.stats.failures == 1
        assert await cache.get_or_load("k", failing, ttl=10) == "v1"  # refresh tried again
        await asyncio.wait(asyncio.all_tasks() - {asyncio.current_task()})
        clock.advance(10)  # expired: an ordinary miss loads again
        return await load_taking(cache, clock, "k", "v3", seconds=1)

    assert run(scenario()) == "v3"
    assert cache.refreshes == 2 and cache.stats.failures == 2


def test_a_loader_that_cannot_start_does_not_fail_the_hit():
    clock = ManualClock()
    cache = EarlyRefreshCache(clock=clock, rng=FixedRandom(0.999))

    def broken():
        raise Boom("cannot start")

    async def scenario():
        await load_taking(cache, clock, "k", "v1", seconds=1)
        clock.advance(5)
        return await cache.get_or_load("k", broken, ttl=10)

    assert run(scenario()) == "v1"
    assert cache.stats.failures == 1 and cache.pending == 0


def test_load_durations_are_forgotten_for_evicted_keys():
    clock = ManualClock()
    cache = EarlyRefreshCache(clock=clock, max_entries=2, rng=FixedRandom(0.0))

    async def scenario():
        for i in range(20):
            await load_taking(cache, clock, i, i, seconds=0.5, ttl=60)

    run(scenario())
    assert len(cache) == 2 and len(cache._delta) <= 2 * 2 + 1


@pytest.mark.parametrize(("beta", "error"), [(0, ValueError), (-1, ValueError),
                                             (math.nan, ValueError), (math.inf, ValueError),
                                             (True, TypeError), ("1", TypeError)])
def test_bad_beta_is_refused(beta, error):
    with pytest.raises(error, match="beta"):
        EarlyRefreshCache(beta=beta)


def test_bad_rng_and_bad_ttl_are_refused():
    with pytest.raises(TypeError, match="rng"):
        EarlyRefreshCache(rng=object())
    cache = EarlyRefreshCache()
    with pytest.raises(ValueError, match="ttl"):
        run(cache.get_or_load("k", GatedLoader(), ttl=0))
    assert EarlyRefreshCache(beta=2).beta == 2.0
