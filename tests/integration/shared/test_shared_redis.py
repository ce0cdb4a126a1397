"""The shared part on a real Redis (REDIS_URL, else the embedded server) and PostgreSQL.

The lock claims of chapter 10, with real expiry: a non-owner release deletes nothing, an
expired owner cannot extend, a stale fenced write is refused; redis-py's own Lock beside
ours; the shared cache across real processes, with a server that stops and one that stalls.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest
import redis
from redis.exceptions import LockNotOwnedError

from cachequeue import db, shared
from cachequeue.course.app.summariser import Summariser
from cachequeue.course.probes import redislab
from cachequeue.course.procs import sharedreaders
from cachequeue.shared import RedisCounter, RedisLock, SharedCache, fenced_read, fenced_write


def test_a_non_owner_release_returns_0_and_the_lock_is_kept(keyspace):
    client, ns = keyspace
    lock = RedisLock(client, ns + "lock:doc", ttl=30, fences=RedisCounter())
    a = lock.acquire()
    raw_release = client.register_script(shared.lock.RELEASE_SCRIPT)
    assert raw_release(keys=[lock.key], args=["someone-else"]) == 0
    assert lock.owner() == a.owner and client.pttl(lock.key) > 25_000
    assert lock.release(a) is True and lock.owner() is None


def test_an_expired_owner_cannot_extend_or_release_and_the_new_hold_is_untouched(keyspace):
    client, ns = keyspace
    lock = RedisLock(client, ns + "lock:doc", ttl=0.05, fences=RedisCounter())
    a = lock.acquire()
    redislab.wait_until_expired(client, lock.key)
    assert lock.extend(a, ttl=30) is False
    assert client.exists(lock.key) == 0, "extend never brings an expired hold back"
    b = lock.acquire(ttl=30)
    assert (a.fence, b.fence) == (1, 2)
    before = client.pttl(lock.key)
    assert lock.extend(a, ttl=60) is False and lock.release(a) is False
    assert lock.owner() == b.owner and client.pttl(lock.key) <= before


def test_a_stale_fenced_write_is_refused(keyspace, conn):
    client, ns = keyspace
    shared.fencing.install(conn)
    shared.fencing.install(conn)  # idempotent
    lock = RedisLock(client, ns + "lock:doc", ttl=0.05, fences=RedisCounter())
    a = lock.acquire()  # a is paused from here on
    redislab.wait_until_expired(client, lock.key)
    b = lock.acquire(ttl=30)
    assert fenced_write(conn, "summary:42", b.fence, {"by": "b"}) is True
    assert fenced_write(conn, "summary:42", a.fence, {"by": "a"}) is False
    assert fenced_read(conn, "summary:42") == (b.fence, {"by": "b"})
    assert fenced_write(conn, "summary:42", b.fence, {"by": "b", "again": True}) is True
    redislab.unfenced_write(conn, "summary:42", a.fence, {"by": "a"})  # no check: a wins
    assert fenced_read(conn, "summary:42") == (a.fence, {"by": "a"})


def test_concurrent_fenced_writers_leave_the_largest_token(schema):
    fences = list(range(1, 41))
    random.Random(7).shuffle(fences)
    barrier = threading.Barrier(4)
    accepted: list[int] = []

    with db.connect(schema) as conn:
        shared.fencing.install(conn)

    def writer(mine):
        with db.connect(schema) as conn:
            barrier.wait(timeout=30)
            for fence in mine:
                if fenced_write(conn, "r", fence, {"fence": fence}):
                    accepted.append(fence)

    threads = [threading.Thread(target=writer, args=(fences[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with db.connect(schema) as conn:
        assert fenced_read(conn, "r") == (40, {"fence": 40})
    assert 40 in accepted


def test_acquisitions_from_many_threads_never_overlap_and_fences_increase(keyspace, redis_url):
    client, ns = keyspace
    held, overlaps, fences = [], [], []
    guard = threading.Lock()

    def contender():
        own = shared.connect(redis_url)
        lock = RedisLock(own, ns + "lock:hot", ttl=10, fences=RedisCounter())
        for _ in range(60):
            grant = lock.acquire()
            if grant is None:
                continue
            with guard:
                if held:
                    overlaps.append((held[-1], grant.fence))
                held.append(grant.fence)
                fences.append(grant.fence)
            with guard:
                held.remove(grant.fence)
            assert lock.release(grant) is True
        own.close()

    threads = [threading.Thread(target=contender) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
    assert sorted(fences) == list(range(1, len(fences) + 1)), "every grant got its own fence"


def test_redis_py_lock_refuses_a_foreign_release_but_does_not_fence(keyspace):
    client, ns = keyspace
    a = client.lock(ns + "lock:doc", timeout=0.05)
    assert a.acquire(blocking=False)
    redislab.wait_until_expired(client, ns + "lock:doc")
    b = client.lock(ns + "lock:doc", timeout=30)
    assert b.acquire(blocking=False)
    b_token = client.get(ns + "lock:doc")
    with pytest.raises(LockNotOwnedError):
        a.extend(10)
    with pytest.raises(LockNotOwnedError):
        a.release()
    assert client.get(ns + "lock:doc") == b_token and b.owned()
    assert client.pttl(ns + "lock:doc") > 25_000
    assert not any("fenc" in name for name in dir(b)), "no fencing token to hand to a resource"


def test_misses_in_three_processes_share_one_load(keyspace, redis_url):
    client, ns = keyspace
    results = sharedreaders.run(redis_url, ns, "tenant=1|doc=42|v=3|view=member",
                                processes=3, readers=4)
    assert sorted(r["role"] for r in results) == ["loading", "waiting", "waiting"]
    assert sum(r["stats"]["loads"] for r in results) == 1
    values = [v for r in results for v in r["values"]]
    assert len(values) == 12 and all(v == values[0] for v in values)
    for r in results:
        assert r["stats"]["coalesced"] == 3  # four readers, one lookup per process


def test_a_stopped_server_degrades_to_the_loader_in_bounded_time(private_redis):
    model = Summariser()

    async def scenario(server):
        client = shared.connect(server.url, timeout=0.2, asynchronous=True)
        cache = SharedCache(client, namespace="cq:t_degrade:", max_pending=3, retry_after=60)
        assert await cache.get_or_load("d1", lambda: model.asummarise("一号文档。"), ttl=30)
        server.stop()
        start = time.monotonic()
        answers = await asyncio.gather(*(
            cache.get_or_load(f"d{d}", lambda d=d: model.asummarise(f"{d} 号文档。"), ttl=30)
            for d in (1, 2, 3) for _ in range(10)))
        elapsed = time.monotonic() - start
        await client.aclose()
        return cache, answers, elapsed

    cache, answers, elapsed = asyncio.run(scenario(private_redis))
    assert len(answers) == 30 and model.calls == 4  # one load before, one per key after
    assert cache.stats.degraded == 3 and 1 <= cache.stats.redis_errors <= 3
    assert isinstance(cache.last_error, redis.ConnectionError)
    assert elapsed < 5.0, "well under the 6 s that a 0.2 s timeout per lookup would cost"


def test_a_stalled_server_costs_one_timeout_then_the_breaker_skips_it(private_redis):
    async def scenario(server):
        client = shared.connect(server.url, timeout=0.2, asynchronous=True)
        cache = SharedCache(client, namespace="cq:t_stall:", retry_after=60)
        assert await cache.get_or_load("k", lambda: asyncio.sleep(0, "v0"), ttl=30) == "v0"
        await cache.invalidate("k")
        server.freeze()  # SIGSTOP: the socket stays, no reply ever comes
        try:
            start = time.monotonic()
            first = await cache.get_or_load("k", lambda: asyncio.sleep(0, "v1"), ttl=30)
            stalled = time.monotonic() - start
            start = time.monotonic()
            second = await cache.get_or_load("k", lambda: asyncio.sleep(0, "v2"), ttl=30)
            skipped = time.monotonic() - start
        finally:
            server.thaw()
            await client.aclose()
        return cache, (first, second), stalled, skipped

    cache, answers, stalled, skipped = asyncio.run(scenario(private_redis))
    assert answers == ("v1", "v2")
    assert isinstance(cache.last_error, redis.TimeoutError)
    assert stalled > 0.15, "the first lookup waited for the client's timeout"
    # ... and the second did not ask the frozen server again (that would be a second error
    # after another timeout): the breaker sent it straight to the loader.
    assert (cache.stats.redis_errors, cache.stats.degraded) == (1, 2)
    assert stalled < 30 and skipped < 30, "neither hung"
