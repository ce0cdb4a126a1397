"""SharedCache keeps every promise LoadingCache keeps (tests/cachebehaviour.py), against the
real Redis (REDIS_URL, else the embedded server), in a namespace of the test's own.

Time: a value's TTL and a load's lock are Redis expiries, which run on the server's clock.
`elapse(seconds)` ages every key of the namespace by that much (PTTL less the seconds;
at zero or below the key is gone, as if it had expired), so a test steps TTLs by hand; the
TTLs are long (60 s) next to the milliseconds the test takes, so the server's own clock
moving on meanwhile cannot change a verdict. The breaker's clock is a ManualClock, moved
along.
"""

from __future__ import annotations

import asyncio

import pytest
from cachebehaviour import CacheBehaviour

from cachequeue import shared
from cachequeue.clock import ManualClock
from cachequeue.shared import SharedCache


class TestSharedCacheBehaviour(CacheBehaviour):
    @pytest.fixture(autouse=True)
    def _redis(self, keyspace, redis_url):
        self.raw, self.namespace = keyspace
        self.url, self.clock, self.clients = redis_url, ManualClock(), []

    def make(self, **settings) -> SharedCache:
        client = shared.connect(self.url, asynchronous=True)
        self.clients.append(client)
        return SharedCache(client, namespace=self.namespace, clock=self.clock, **settings)

    async def closing(self) -> None:
        for client in self.clients:
            await client.aclose()

    def _keys(self, kind: str) -> list[str]:
        """The namespace's keys of one kind: "v" (values), "load" (load locks), "*" (all)."""
        return list(self.raw.scan_iter(match=f"{self.namespace}{kind}:*", count=500))

    async def elapse(self, seconds: float) -> None:
        self.clock.advance(seconds)
        for key in self._keys("*"):
            left = self.raw.pttl(key) - round(seconds * 1000)
            if left <= 0:
                self.raw.delete(key)
            else:
                self.raw.pexpire(key, left)

    async def invalidate(self, cache, key: str) -> bool:
        return await cache.invalidate(key)

    def stored(self, cache) -> int:
        return len(self._keys("v"))

    def loading(self, cache) -> int:
        return len(self._keys("load"))


def test_elapse_ages_the_keys_and_ends_them_at_zero(keyspace):
    """The time step the suite relies on: keys of the namespace only, by the given amount."""
    raw, ns = keyspace
    suite = TestSharedCacheBehaviour()
    suite.raw, suite.namespace, suite.clock = raw, ns, ManualClock()
    raw.set(ns + "v:a", "1", px=60_000)
    raw.set(ns + "v:b", "2", px=20_000)
    outside = ns[:-1] + "x:v:c"  # another namespace's key
    raw.set(outside, "3", px=60_000)
    try:
        asyncio.run(suite.elapse(30))
        assert 0 < raw.pttl(ns + "v:a") <= 30_000
        assert raw.exists(ns + "v:b") == 0
        assert raw.pttl(outside) > 59_000 and suite.clock() == 30
    finally:
        raw.delete(outside)
