"""A loading process that dies: its load lock expires after `load_timeout`, another process
takes the key over and loads. Real processes, real Redis expiry (REDIS_URL, else the
embedded server); the kill waits for the process's own "ready" line, never for a sleep.
The lock lives 30 s, so a slow machine cannot let it run out early; once the other
process waits for it, the rest of its life is cut to 1 ms."""

from __future__ import annotations

import asyncio
import json
import select
import signal
import subprocess
import sys

from cachequeue import shared
from cachequeue.course.app.summariser import summarise_text
from cachequeue.course.probes.workload import GatedLoader
from cachequeue.shared import SharedCache

KEY = "tenant=1|doc=42|v=3|view=member"


def _ready(proc: subprocess.Popen, timeout: float = 60.0) -> dict:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"reader {proc.pid} said nothing within {timeout} s (exit {proc.poll()})"
    return json.loads(proc.stdout.readline())


def test_a_killed_loader_s_lock_expires_after_load_timeout_and_another_process_loads(
        keyspace, redis_url):
    client, ns = keyspace
    lock_key = ns + "load:" + KEY
    loader = subprocess.Popen(
        [sys.executable, "-m", "cachequeue.course.procs.sharedreaders", "--url", redis_url,
         "--namespace", ns, "--key", KEY, "--readers", "1", "--load-timeout", "30"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert _ready(loader) == {"event": "ready", "role": "loading"}  # it holds the lock
        loader.send_signal(signal.SIGKILL)  # dies mid-load: nobody will release the lock
        assert loader.wait(timeout=60) == -signal.SIGKILL
    finally:
        if loader.poll() is None:
            loader.kill()
            loader.wait()
    left = client.pttl(lock_key)
    assert 0 < left <= 30_000, "the dead process's lock is still there, with its expiry"

    heir = GatedLoader({"summary": summarise_text("taken over")})
    heir.release.set()

    async def take_over():
        cache = SharedCache(shared.connect(redis_url, asynchronous=True), namespace=ns,
                            wait_timeout=60)
        try:
            reader = asyncio.create_task(cache.get_or_load(KEY, heir, ttl=30))
            while cache.stats.waits == 0:  # it found the dead process's lock, and waits
                await asyncio.sleep(0.001)
            waiting = (heir.calls, client.exists(lock_key))
            # The rest of the dead process's load_timeout passes at once: 1 ms more to live.
            client.pexpire(lock_key, 1)
            value = await reader
        finally:
            await cache.client.aclose()
        return waiting, value, cache.stats

    waiting, value, stats = asyncio.run(take_over())
    assert waiting == (0, 1), "while the lock lived, nobody loaded"
    assert value == {"summary": summarise_text("taken over")}
    assert (stats.waits, stats.loads, stats.timeouts, heir.calls) == (1, 1, 0, 1)
    assert json.loads(client.get(ns + "v:" + KEY)) == value
    assert client.exists(lock_key) == 0
