"""LoadingCache input validation (good TTLs, the constructor's table) and the opt-in negative
cache. Bad TTLs and loaders are refused by every cache alike: tests/cachebehaviour.py."""

from __future__ import annotations

import asyncio
import math
from fractions import Fraction

import pytest

from cachequeue.cache import LoadingCache, NotFound
from cachequeue.clock import ManualClock


def run(coro):
    return asyncio.run(coro)


async def load():
    return "v"


@pytest.mark.parametrize("ttl", [1, 0.001, 60, 60.0, 2.5, Fraction(1, 3)])
def test_good_ttls_are_accepted(ttl):
    clock = ManualClock()
    cache = LoadingCache(clock=clock)

    async def scenario():
        await cache.get_or_load("k", load, ttl=ttl)
        clock.advance(float(ttl) * 0.999)
        await cache.get_or_load("k", load, ttl=ttl)

    run(scenario())
    assert (cache.stats.loads, cache.stats.hits) == (1, 1)


def test_ttl_is_keyword_only_and_required():
    cache = LoadingCache()
    with pytest.raises(TypeError):
        run(cache.get_or_load("k", load))
    with pytest.raises(TypeError):
        run(cache.get_or_load("k", load, 5))


def test_an_unhashable_key_is_a_type_error():
    cache = LoadingCache()
    with pytest.raises(TypeError, match="unhashable"):
        run(cache.get_or_load(["doc", 42], load, ttl=5))


BAD_SETTINGS = [
    ({"max_entries": 0}, ValueError), ({"max_entries": -5}, ValueError),
    ({"max_entries": 1.5}, TypeError), ({"max_entries": True}, TypeError),
    ({"max_entries": "100"}, TypeError), ({"max_pending": 0}, ValueError),
    ({"max_pending": None}, TypeError), ({"max_ttl": 0}, ValueError),
    ({"max_ttl": math.inf}, ValueError), ({"max_ttl": math.nan}, ValueError),
    ({"max_ttl": False}, TypeError), ({"max_ttl": "60"}, TypeError),
    ({"policy": "LRU"}, ValueError), ({"policy": "random"}, ValueError),
    ({"policy": None}, ValueError), ({"clock": 0.0}, TypeError),
    ({"negative_ttl": 0}, ValueError), ({"negative_ttl": 61}, ValueError),
    ({"negative_ttl": math.nan}, ValueError), ({"negative_ttl": True}, TypeError),
]


@pytest.mark.parametrize(("settings", "error"), BAD_SETTINGS, ids=[str(s) for s, _ in BAD_SETTINGS])
def test_bad_settings_are_refused(settings, error):
    name = next(iter(settings))
    with pytest.raises(error, match=name):
        LoadingCache(**settings)


def test_settings_are_keyword_only_and_readable():
    with pytest.raises(TypeError):
        LoadingCache(10)
    cache = LoadingCache(max_entries=3, max_pending=2, max_ttl=10, policy="lru", negative_ttl=1)
    assert (cache.max_entries, cache.max_pending, cache.max_ttl, cache.policy,
            cache.negative_ttl) == (3, 2, 10.0, "lru", 1.0)
    assert repr(cache) == "LoadingCache(policy='lru', entries=0/3, pending=0/2)"


def missing_document():
    calls = []

    async def loader():
        calls.append(1)
        raise NotFound("document 404 does not exist")

    return loader, calls


def test_not_found_is_not_cached_by_default():
    cache = LoadingCache(clock=ManualClock())
    loader, calls = missing_document()

    async def scenario():
        for _ in range(3):
            with pytest.raises(NotFound):
                await cache.get_or_load("doc:404", loader, ttl=30)

    run(scenario())
    assert len(calls) == 3 and len(cache) == 0 and cache.stats.failures == 3


def test_negative_cache_remembers_not_found_for_its_own_short_ttl():
    clock = ManualClock()
    cache = LoadingCache(clock=clock, negative_ttl=2)
    loader, calls = missing_document()

    async def scenario():
        with pytest.raises(NotFound, match="404"):
            await cache.get_or_load("doc:404", loader, ttl=30)
        clock.advance(1.9)
        with pytest.raises(NotFound, match="404"):
            await cache.get_or_load("doc:404", loader, ttl=30)  # answered from the cache
        assert len(calls) == 1
        clock.advance(0.1)  # negative_ttl (2 s) is over, although ttl=30 was asked for
        with pytest.raises(NotFound):
            await cache.get_or_load("doc:404", loader, ttl=30)

    run(scenario())
    assert len(calls) == 2
    assert (cache.stats.negative_hits, cache.stats.failures, cache.stats.expired) == (1, 0, 1)


def test_negative_cache_leaves_other_errors_and_empty_values_alone():
    cache = LoadingCache(clock=ManualClock(), negative_ttl=2)
    calls = []

    async def flaky():
        calls.append(1)
        raise ConnectionError("model down")

    async def empty():
        return ""

    async def scenario():
        for _ in range(2):
            with pytest.raises(ConnectionError):
                await cache.get_or_load("a", flaky, ttl=30)
        assert await cache.get_or_load("b", empty, ttl=30) == ""
        assert await cache.get_or_load("b", flaky, ttl=30) == ""  # an empty value is a value

    run(scenario())
    assert len(calls) == 2 and cache.keys() == ["b"] and cache.stats.hits == 1


def test_negative_entries_take_capacity_and_invalidate_like_others():
    cache = LoadingCache(clock=ManualClock(), negative_ttl=5, max_entries=2)
    loader, calls = missing_document()

    async def scenario():
        with pytest.raises(NotFound):
            await cache.get_or_load("missing", loader, ttl=30)
        assert cache.invalidate("missing") is True
        with pytest.raises(NotFound):
            await cache.get_or_load("missing", loader, ttl=30)
        await cache.get_or_load("x", load, ttl=30)
        await cache.get_or_load("y", load, ttl=30)

    run(scenario())
    assert len(calls) == 2 and cache.keys() == ["x", "y"] and cache.stats.evictions == 1
