"""LoadingCache against a plain reference model: random operation sequences (hypothesis)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from cachequeue.cache import LoadingCache
from cachequeue.clock import ManualClock

KEYS = st.sampled_from("abcdef")
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("get"), KEYS, st.integers(1, 5)),
        st.tuples(st.just("advance"), st.integers(0, 3)),
        st.tuples(st.just("invalidate"), KEYS),
        st.tuples(st.just("purge")),
    ),
    max_size=60,
)


class Model:
    """The contract, written as plainly as possible: a list of [key, value, expires]."""

    def __init__(self, max_entries: int, lru: bool) -> None:
        self.max_entries, self.lru = max_entries, lru
        self.entries: list[list] = []
        self.now = self.loads = self.evictions = 0

    def find(self, key):
        return next((e for e in self.entries if e[0] == key), None)

    def get(self, key, ttl):
        entry = self.find(key)
        if entry is not None and entry[2] > self.now:
            if self.lru:
                self.entries.remove(entry)
                self.entries.append(entry)
            return entry[1]
        if entry is not None:
            self.entries.remove(entry)
        self.loads += 1
        self.purge()
        while len(self.entries) >= self.max_entries:
            self.entries.pop(0)
            self.evictions += 1
        self.entries.append([key, f"{key}{self.loads}", self.now + ttl])
        return f"{key}{self.loads}"

    def purge(self):
        self.entries = [e for e in self.entries if e[2] > self.now]


@settings(max_examples=150, deadline=None)
@given(ops=OPS, max_entries=st.integers(1, 4), lru=st.booleans())
def test_cache_agrees_with_the_reference_model(ops, max_entries, lru):
    clock = ManualClock()
    cache = LoadingCache(max_entries=max_entries, policy="lru" if lru else "fifo", clock=clock)
    model = Model(max_entries, lru)

    async def scenario():
        for op in ops:
            if op[0] == "get":
                _, key, ttl = op

                async def load(key=key):
                    return f"{key}{cache.stats.loads}"

                assert await cache.get_or_load(key, load, ttl=ttl) == model.get(key, ttl)
            elif op[0] == "advance":
                clock.advance(op[1])
                model.now += op[1]
            elif op[0] == "invalidate":
                entry = model.find(op[1])
                if entry is not None:
                    model.entries.remove(entry)
                assert cache.invalidate(op[1]) is (entry is not None)
            else:
                cache.purge_expired()
                model.purge()
            assert cache.keys() == [e[0] for e in model.entries]
            assert len(cache) <= max_entries
        assert (cache.stats.loads, cache.stats.evictions) == (model.loads, model.evictions)

    asyncio.run(scenario())
