"""Cost of a shared (Redis) cache hit beside an in-process LoadingCache hit; misses across processes.

    python bench/redis_hit.py            # JSON on stdout

Uses REDIS_URL, else the embedded server, under the key prefix `cq:bench_redis:` (cleared
before and after; nothing else is touched). In one process, interleaved repetitions
(A B C D E A B C D E ...) time `--hits` calls of each contender on one warm key:

- local: `LoadingCache.get_or_load` (a dict lookup, TTL check, counters);
- shared: `SharedCache.get_or_load` (an MGET round trip on redis.asyncio, JSON decoding, the
  in-process flight bookkeeping);
- asyncio_get / sync_get: a bare GET of the same key with redis.asyncio and with the
  synchronous redis-py client (the round trip alone);
- json_loads: decoding the stored text (the serialisation alone).

Figures are medians in microseconds per call. Then `--processes` reader processes with
`--readers` concurrent lookups each miss one cold key: exactly one load (asserted).
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

from cachequeue import embedded_redis, shared
from cachequeue.cache import LoadingCache, cache_key
from cachequeue.course.app.summariser import summarise_text
from cachequeue.course.probes import redislab
from cachequeue.course.procs import sharedreaders

NAMESPACE = "cq:bench_redis:"
VALUE = {"summary": summarise_text("第 42 号文档第 3 版的正文。它很长，需要模型来概括。" * 4),
         "version": 3, "language": "zh"}


def sync_get_us(client, key: str, hits: int) -> float:
    get = client.get
    start = time.perf_counter()
    for _ in range(hits):
        get(key)
    return (time.perf_counter() - start) / hits * 1e6


async def main(hits: int, repetitions: int, processes: int, readers: int) -> dict:
    url = embedded_redis.redis_url(start=True)  # set-up: the embedded server unless REDIS_URL
    sync_client = shared.connect(url)
    shared.clear(sync_client, NAMESPACE)
    async_client = shared.connect(url, asynchronous=True)
    cache = shared.SharedCache(async_client, namespace=NAMESPACE)
    key = cache_key(tenant=1, document=42, version=3, viewer="member", lang="zh")
    samples = {"local": [], "shared": [], "asyncio_get": [], "json_loads": [], "sync_get": []}
    for _ in range(repetitions):
        costs = await redislab.hit_costs(LoadingCache(), cache, key, VALUE, hits=hits,
                                         repetitions=1)
        for name, label in [("local", "local"), ("shared", "shared"),
                            ("asyncio_get", "redis_get"), ("json_loads", "json_loads")]:
            samples[name].append(costs["us_all"][label][0])
        samples["sync_get"].append(sync_get_us(sync_client, cache.value_key(key), hits))
    median = {name: round(statistics.median(values), 3) for name, values in samples.items()}

    start = time.perf_counter()
    results = sharedreaders.run(url, NAMESPACE, cache_key(tenant=1, document=43, version=1,
                                                          viewer="member"),
                                processes=processes, readers=readers)
    wall = time.perf_counter() - start
    loads = sum(p["stats"]["loads"] for p in results)
    assert loads == 1, f"{processes * readers} misses across {processes} processes made {loads} loads"

    info = sync_client.info("server")
    await async_client.aclose()
    shared.clear(sync_client, NAMESPACE)
    sync_client.close()
    return {
        "benchmark": "redis_hit",
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "redis": {"version": info["redis_version"],
                  "source": "REDIS_URL" if os.environ.get("REDIS_URL") else "embedded",
                  "transport": "unix socket" if url.startswith("unix://") else "tcp"},
        "versions": {"redis-py": version("redis")},
        "hits_per_repetition": hits,
        "repetitions": repetitions,
        "hit_us_median": median,
        "hit_us_all": {k: [round(v, 3) for v in vs] for k, vs in samples.items()},
        "ratio_shared_to_local": round(median["shared"] / median["local"], 1),
        "cross_process_misses": {"processes": processes, "readers_per_process": readers,
                                 "loads": loads, "wall_s": round(wall, 3),
                                 "roles": sorted(p["role"] for p in results)},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=5_000)
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--readers", type=int, default=250)
    args = parser.parse_args()
    result = asyncio.run(main(args.hits, args.repetitions, args.processes, args.readers))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
