"""SharedCache on fakeredis: two caches on one fake server stand for two processes.

Interleavings are fixed by GatedLoader's events; the fake server's clock (its key expiry)
stands still unless a test moves it; the degradation tests turn the fake server off
(`connected = False`) and step the breaker with a ManualClock. The behaviour SharedCache
shares with LoadingCache runs against the real Redis in
tests/integration/shared/test_shared_cache_behaviour.py; real processes, a real server
that stops and one that stalls are in tests/integration/shared/test_shared_redis.py.
"""

from __future__ import annotations

import asyncio
import json
import time
import types

import fakeredis
import fakeredis._socket._base
import pytest
from cachebehaviour import refused_while_loading

from cachequeue.clock import ManualClock
from cachequeue.course.probes.workload import GatedLoader
from cachequeue.shared import SharedCache, SharedCacheTimeout

NS = "cq:t_unit:"


class Boom(Exception):
    pass


@pytest.fixture(autouse=True)
def redis_clock(monkeypatch):
    """The fake server's clock, the one its key expiry reads: frozen unless a test moves it
    (seconds, starting from now), so no TTL runs out because the machine was slow."""
    clock = ManualClock(time.time())
    monkeypatch.setattr(fakeredis._socket._base, "time", types.SimpleNamespace(time=clock))
    return clock


@pytest.fixture
def server():
    return fakeredis.FakeServer()


@pytest.fixture
def make(server):
    def make(**kwargs) -> SharedCache:
        client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
        kwargs.setdefault("clock", ManualClock())
        return SharedCache(client, namespace=NS, **kwargs)
    return make


def run(coro):
    return asyncio.run(coro)


def test_a_miss_loads_stores_json_with_its_ttl_and_the_next_call_hits(make, server):
    cache = make()
    gate = GatedLoader({"summary": "摘要", "tags": ["a"]})
    gate.release.set()

    async def scenario():
        first = await cache.get_or_load("k", gate, ttl=30)
        again = await cache.get_or_load("k", gate, ttl=30)
        return first, again

    first, again = run(scenario())
    assert first == again == {"summary": "摘要", "tags": ["a"]}
    raw = fakeredis.FakeRedis(server=server, decode_responses=True)
    assert json.loads(raw.get(NS + "v:k")) == first
    assert raw.pttl(NS + "v:k") == 30_000
    assert raw.exists(NS + "load:k") == 0, "the load lock is released"
    assert (cache.stats.loads, cache.stats.hits, gate.calls) == (1, 1, 1)


def test_every_caller_gets_its_own_copy(make):
    cache, gate = make(), GatedLoader({"tags": ["a"]})

    async def scenario():
        readers = [asyncio.create_task(cache.get_or_load("k", gate, ttl=5)) for _ in range(2)]
        await gate.started.wait()
        gate.release.set()
        one, two = await asyncio.gather(*readers)
        one["tags"].append("mutated")
        return two, await cache.get_or_load("k", gate, ttl=5)

    two, later = run(scenario())
    assert two == later == {"tags": ["a"]}


def test_concurrent_misses_in_two_processes_share_one_load(make):
    a, b = make(), make()
    gate = GatedLoader("summary")

    async def scenario():
        readers = [asyncio.create_task(a.get_or_load("k", gate, ttl=5)) for _ in range(20)]
        await gate.started.wait()  # a holds the load lock and is loading
        readers += [asyncio.create_task(b.get_or_load("k", gate, ttl=5)) for _ in range(20)]
        while b.stats.waits == 0:  # b's lookup has found the lock and waits
            await asyncio.sleep(0)
        gate.release.set()
        return await asyncio.gather(*readers)

    assert run(scenario()) == ["summary"] * 40
    assert gate.calls == 1
    assert (a.stats.loads, a.stats.coalesced, b.stats.loads, b.stats.waits, b.stats.coalesced) == (
        1, 19, 0, 1, 19)


def test_a_failed_load_reaches_its_waiters_releases_the_lock_and_another_process_loads(make):
    a, b = make(), make()
    failing, good = GatedLoader(error=Boom("model down")), GatedLoader("summary")

    async def scenario():
        mine = [asyncio.create_task(a.get_or_load("k", failing, ttl=5)) for _ in range(3)]
        await failing.started.wait()
        theirs = asyncio.create_task(b.get_or_load("k", good, ttl=5))
        while b.stats.waits == 0:
            await asyncio.sleep(0)
        failing.release.set()
        outcomes = await asyncio.gather(*mine, return_exceptions=True)
        await good.started.wait()  # b took over once the lock was released
        good.release.set()
        return outcomes, await theirs

    outcomes, theirs = run(scenario())
    assert [type(o) for o in outcomes] == [Boom] * 3
    assert theirs == "summary"
    assert (a.stats.failures, b.stats.loads) == (1, 1)


def test_a_loader_that_never_lets_go_loses_its_lock_after_load_timeout_and_another_loads(
        make, server, redis_clock):
    """A loader whose process died (or hangs) never releases its load lock: Redis expires it
    after `load_timeout`, a waiting process takes the key over and loads, and when the old
    load does finish after all, the value written first stays for everyone. The server's
    clock is moved by hand: b looks while 199 ms have passed, and again after 201 ms."""
    raw = fakeredis.FakeRedis(server=server, decode_responses=True)
    a, b = make(load_timeout=0.2), make(wait_timeout=60)
    hung, heir = GatedLoader("from a, too late"), GatedLoader("from b")
    heir.release.set()
    looks = []  # at each of b's looks (MGET of the value and the lock): was the lock there?
    mget = b.client.mget

    async def looking(*keys):
        value, holder = await mget(*keys)
        looks.append(holder is not None)
        return [value, holder]

    b.client.mget = looking

    async def looked_again():
        seen = len(looks)
        while len(looks) < seen + 2:  # the second of them began after the clock moved
            await asyncio.sleep(0.001)

    async def scenario():
        mine = asyncio.create_task(a.get_or_load("k", hung, ttl=5))
        await hung.started.wait()  # a holds the lock with a 200 ms expiry, and never lets go
        lock_ttl = raw.pttl(NS + "load:k")
        theirs = asyncio.create_task(b.get_or_load("k", heir, ttl=5))
        redis_clock.advance(0.199)
        await looked_again()
        waiting = (looks[-1], b.stats.waits, heir.calls, theirs.done())
        redis_clock.advance(0.002)
        took_over = await theirs
        stored = json.loads(raw.get(NS + "v:k"))
        hung.release.set()  # the old load finally returns: it must not replace b's value
        return lock_ttl, waiting, took_over, stored, await mine

    lock_ttl, waiting, theirs, stored, late = run(scenario())
    assert lock_ttl == 200, "the load lock expires after load_timeout"
    assert waiting == (True, 1, 0, False), "at 199 ms b finds a's lock and waits"
    assert looks[-1] is False and all(looks[:-1]), "b loaded once it found the lock gone"
    assert theirs == stored == "from b"
    assert (b.stats.waits, b.stats.loads, heir.calls, hung.calls) == (1, 1, 1, 1)
    assert late == "from b", "the first value written stays, and a answers with it too"
    assert json.loads(raw.get(NS + "v:k")) == "from b"
    assert raw.exists(NS + "load:k") == 0


def test_a_value_once_written_is_never_replaced(make, server):
    raw = fakeredis.FakeRedis(server=server, decode_responses=True)
    cache, gate = make(), GatedLoader("mine")

    async def scenario():
        reader = asyncio.create_task(cache.get_or_load("k", gate, ttl=5))
        await gate.started.wait()
        raw.set(NS + "v:k", json.dumps("theirs"))  # written meanwhile (e.g. our lock expired)
        gate.release.set()
        return await reader

    assert run(scenario()) == "theirs", "the first value written wins for every reader"
    assert json.loads(raw.get(NS + "v:k")) == "theirs"


def test_waiting_for_a_load_that_never_finishes_times_out(make, server):
    raw = fakeredis.FakeRedis(server=server, decode_responses=True)
    raw.set(NS + "load:k", "someone", px=60_000)  # a loader that is stuck
    cache = make(wait_timeout=0.05)
    gate = GatedLoader("never")
    with pytest.raises(SharedCacheTimeout, match="loading elsewhere"):
        run(cache.get_or_load("k", gate, ttl=5))
    assert (cache.stats.waits, cache.stats.timeouts, gate.calls) == (1, 1, 0)


def test_a_value_that_is_not_json_is_a_failure_and_releases_the_lock(make, server):
    cache = make()
    gate = GatedLoader({1, 2})
    gate.release.set()
    with pytest.raises(TypeError, match="not JSON serializable"):
        run(cache.get_or_load("k", gate, ttl=5))
    raw = fakeredis.FakeRedis(server=server)
    assert raw.exists(NS + "load:k", NS + "v:k") == 0
    assert cache.stats.failures == 1


def test_when_redis_is_down_answers_come_from_the_loader_and_the_breaker_spares_redis(make,
                                                                                     server):
    clock = ManualClock()
    cache = make(clock=clock, retry_after=5, max_pending=2)
    server.connected = False
    loads = []

    async def load(k):
        loads.append(k)
        return f"summary {k}"

    async def scenario():
        first = await asyncio.gather(*(cache.get_or_load(k, lambda k=k: load(k), ttl=5)
                                       for k in "ab" for _ in range(5)))
        errors_after_first = cache.stats.redis_errors
        second = await asyncio.gather(*(cache.get_or_load(k, lambda k=k: load(k), ttl=5)
                                        for k in "ab"))
        return first, errors_after_first, second

    first, errors, second = run(scenario())
    assert first == ["summary a"] * 5 + ["summary b"] * 5
    assert second == ["summary a", "summary b"]
    assert sorted(loads) == ["a", "a", "b", "b"], "coalesced per key even without Redis"
    assert 1 <= errors <= 2 and cache.stats.redis_errors == errors, "the breaker is open"
    assert cache.stats.degraded == 4 and not cache.available

    server.connected = True
    clock.advance(5)
    assert cache.available
    assert run(cache.get_or_load("a", lambda: load("a"), ttl=5)) == "summary a"
    assert cache.stats.degraded == 4 and len(loads) == 5  # stored in Redis again
    assert run(cache.get_or_load("a", lambda: load("a"), ttl=5)) == "summary a"
    assert cache.stats.hits == 1


def test_degraded_loads_are_capped_by_max_pending_too(make, server):
    cache = make(max_pending=1)
    server.connected = False
    gate, other = GatedLoader("a"), GatedLoader("b")

    async def scenario():
        a = await refused_while_loading(cache, gate, other)
        gate.release.set()
        return await a

    assert run(scenario()) == "a"
    assert (cache.stats.rejected, other.calls) == (1, 0)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"ttl": 4000}, ValueError, "max_ttl"),  # the default max_ttl; bad TTLs and loaders
    ({"ttl": 5, "key": ""}, ValueError, "key must be a non-empty"),  # in general: the shared
    ({"ttl": 5, "key": 42}, TypeError, "key must be a str"),  # suite, tests/cachebehaviour.py
])
def test_bad_arguments_are_refused_before_anything_happens(make, kwargs, error, match):
    cache = make()
    args = {"key": "k", "loader": GatedLoader("v"), **kwargs}
    with pytest.raises(error, match=match):
        run(cache.get_or_load(args.pop("key"), args.pop("loader"), **args))
    assert cache.stats.requests == 0


@pytest.mark.parametrize("namespace", ["ch10", "cq:*:", "cq:ch10", "cq:Ch10:", ""])
def test_a_namespace_must_come_from_namespace(namespace):
    with pytest.raises(ValueError, match="namespace must be a prefix"):
        SharedCache(fakeredis.FakeAsyncRedis(), namespace=namespace)


def test_the_client_must_be_an_asyncio_client():
    with pytest.raises(TypeError, match="redis.asyncio.client.Redis"):
        SharedCache(fakeredis.FakeRedis(), namespace=NS)
