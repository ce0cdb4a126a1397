"""Cost of a cache hit (LoadingCache vs cachetools.TTLCache vs async-lru) and 10,000 misses.

    python bench/cache_hit.py            # JSON on stdout

All contenders run in one process, in interleaved repetitions (A B C A B C ...), each
repetition timing `--hits` calls on one warm key in the same kind of loop. A hit through
`LoadingCache.get_or_load` includes its TTL validation and its stats counting; the async-lru
hit goes through its decorator; the cachetools hit is a direct `TTLCache.get`. Figures are
medians in microseconds per call, loop overhead included alike for all; `loop_us` shows it.
Then `--readers` concurrent misses on one cold key: wall time, and exactly one load (asserted);
the naive TtlDict beside it makes one load per reader.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from importlib.metadata import version

import async_lru
import cachetools

from cachequeue.cache import LoadingCache
from cachequeue.course.probes.ttldict import TtlDict

KEY, TTL = "tenant:1:document:42:version:3:viewer:20", 30.0


async def _value():
    return "summary"


def _loader():
    return _value()


def bench_ttlcache(n: int) -> float:
    cache = cachetools.TTLCache(maxsize=100, ttl=TTL)
    cache[KEY] = "summary"
    get = cache.get
    start = time.perf_counter()
    for _ in range(n):
        get(KEY)
    elapsed = time.perf_counter() - start
    assert get(KEY) == "summary"
    return elapsed


async def bench_async_lru(n: int) -> float:
    @async_lru.alru_cache(maxsize=100, ttl=TTL)
    async def summary(key):
        return "summary"

    await summary(KEY)
    start = time.perf_counter()
    for _ in range(n):
        await summary(KEY)
    elapsed = time.perf_counter() - start
    info = summary.cache_info()
    assert (info.hits, info.misses) == (n, 1)
    return elapsed


async def bench_loading_cache(n: int, policy: str) -> float:
    cache = LoadingCache(policy=policy)
    await cache.get_or_load(KEY, _loader, ttl=TTL)
    get_or_load = cache.get_or_load
    start = time.perf_counter()
    for _ in range(n):
        await get_or_load(KEY, _loader, ttl=TTL)
    elapsed = time.perf_counter() - start
    assert (cache.stats.hits, cache.stats.loads) == (n, 1)
    return elapsed


async def bench_loop(n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        pass
    return time.perf_counter() - start


async def concurrent_misses(cache, readers: int) -> tuple[float, int]:
    loads = 0

    async def load():
        nonlocal loads
        loads += 1
        await asyncio.sleep(0)  # the load yields at least once, like any real I/O
        return "summary"

    start = time.perf_counter()
    results = await asyncio.gather(*(cache.get_or_load(KEY, load, ttl=TTL) for _ in range(readers)))
    elapsed = time.perf_counter() - start
    assert results == ["summary"] * readers
    return elapsed, loads


async def main(hits: int, repetitions: int, readers: int) -> dict:
    contenders = {
        "loading_cache_fifo": lambda: bench_loading_cache(hits, "fifo"),
        "loading_cache_lru": lambda: bench_loading_cache(hits, "lru"),
        "async_lru": lambda: bench_async_lru(hits),
        "cachetools_ttlcache_get": lambda: _sync(bench_ttlcache, hits),
        "empty_loop": lambda: bench_loop(hits),
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repetitions):
        for name, run in contenders.items():
            samples[name].append(await run() / hits * 1e6)
    median = {name: round(statistics.median(values), 4) for name, values in samples.items()}
    ours = median["loading_cache_fifo"]

    walls: dict[str, list[float]] = {"loading_cache": [], "naive_ttl_dict": []}
    for _ in range(repetitions):  # interleaved too; a fresh, cold cache each time
        wall, loads = await concurrent_misses(LoadingCache(), readers)
        assert loads == 1, f"{readers} concurrent misses caused {loads} loads"
        walls["loading_cache"].append(wall)
        wall, naive_loads = await concurrent_misses(TtlDict(), readers)
        assert naive_loads == readers
        walls["naive_ttl_dict"].append(wall)
    wall_ms = {k: round(statistics.median(v) * 1e3, 2) for k, v in walls.items()}
    return {
        "benchmark": "cache_hit",
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": {"cachetools": cachetools.__version__, "async-lru": version("async-lru")},
        "hits_per_repetition": hits,
        "repetitions": repetitions,
        "hit_us_median": {k: v for k, v in median.items() if k != "empty_loop"},
        "loop_us": median["empty_loop"],
        "hit_us_all": {k: [round(v, 4) for v in vs] for k, vs in samples.items()},
        "ratio_ours_to_async_lru": round(ours / median["async_lru"], 3),
        "ratio_ours_to_ttlcache_get": round(ours / median["cachetools_ttlcache_get"], 3),
        "target_at_most_half_of_async_lru": ours <= median["async_lru"] / 2,
        "target_at_most_half_of_ttlcache_get": ours <= median["cachetools_ttlcache_get"] / 2,
        "concurrent_misses": {
            "readers": readers,
            "loading_cache": {"loads": 1, "wall_ms_median": wall_ms["loading_cache"]},
            "naive_ttl_dict": {"loads": readers, "wall_ms_median": wall_ms["naive_ttl_dict"]},
        },
    }


async def _sync(fn, n):
    return fn(n)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=200_000)
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--readers", type=int, default=10_000)
    args = parser.parse_args()
    result = asyncio.run(main(args.hits, args.repetitions, args.readers))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
