"""Reader processes that miss the same key of a SharedCache at once: one load across them.

`python -m cachequeue.course.procs.sharedreaders --url URL --namespace NS --key KEY --readers N`
is one such process: it starts N concurrent `get_or_load(KEY)` calls (`--load-timeout S`
sets the cache's `load_timeout`, 30 s by default). Its loader does not return until a line
arrives on stdin, so the load stays open while the others pile up.
The process prints JSON lines on stdout:

    {"event": "ready", "role": "loading"}   its lookup holds the load lock and is loading
    {"event": "ready", "role": "waiting"}   its lookup found another process loading
    {"event": "done", "values": [...], "stats": {...}}   after the values arrived

`run()` starts several of them, waits until every one has said "ready" (an explicit signal,
no sleeping), then writes a line to every stdin (only a loading process reads it) and
collects what each one got. No timing decides the outcome: while the loader waits for its
line, every other lookup can only find the load lock and wait.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import select
import subprocess
import sys
import time

from ...checks import check_int, check_seconds, check_text
from ..app.summariser import summarise_text

__all__ = ["main", "run"]

TEXT = "第 42 号文档第 3 版的正文。它很长，需要模型来概括。"


def _line(proc: subprocess.Popen, deadline: float) -> dict:
    ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
    line = proc.stdout.readline() if ready else ""
    if not line:
        raise RuntimeError(f"reader process {proc.pid} said nothing before the deadline "
                           f"(exit code {proc.poll()})")
    return json.loads(line)


def run(url: str, namespace: str, key: str, *, text: str = TEXT, processes: int = 2,
        readers: int = 5, timeout: float = 60.0) -> list[dict]:
    """Start `processes` reader processes of `readers` concurrent lookups each, release the
    load once all of them are ready, and return one dict per process (in start order):
    its role ("loading" or "waiting"), the values its readers got, and its SharedStats.
    The loader's value is `{"summary": summarise_text(text)}`."""
    check_int(processes, "processes", minimum=1, maximum=16)
    check_int(readers, "readers", minimum=1, maximum=10_000)
    deadline = time.monotonic() + check_seconds(timeout, "timeout")
    cmd = [sys.executable, "-m", "cachequeue.course.procs.sharedreaders", "--url", url,
           "--namespace", namespace, "--key", key, "--readers", str(readers),
           "--text", check_text(text, "text", limit=10_000)]
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(processes)]
    try:
        roles = [_line(proc, deadline)["role"] for proc in procs]
        for proc in procs:  # every lookup is now loading or waiting: let the load finish
            proc.stdin.write("go\n")
            proc.stdin.flush()
        done = [_line(proc, deadline) for proc in procs]
        for proc in procs:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [{"role": role, "values": d["values"], "stats": d["stats"]}
            for role, d in zip(roles, done, strict=True)]


async def _read(url: str, namespace: str, key: str, readers: int, text: str,
                load_timeout: float = 30.0) -> dict:
    from ...shared import SharedCache, connect

    client = connect(url, asynchronous=True)
    cache = SharedCache(client, namespace=namespace, load_timeout=load_timeout)

    async def load():
        await asyncio.to_thread(sys.stdin.readline)  # held open until the parent says go
        return {"summary": summarise_text(text)}

    lookups = [asyncio.create_task(cache.get_or_load(key, load, ttl=60)) for _ in range(readers)]
    while cache.stats.loads + cache.stats.waits == 0:  # this process's own counters
        if all(task.done() for task in lookups):
            break  # answered from Redis at once: nothing to wait for
        await asyncio.sleep(0.001)
    role = "loading" if cache.stats.loads else "waiting" if cache.stats.waits else "hit"
    print(json.dumps({"event": "ready", "role": role}), flush=True)
    values = await asyncio.gather(*lookups)
    await client.aclose()
    return {"event": "done", "values": values, "stats": cache.stats.as_dict()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--readers", type=int, default=5)
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--load-timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    result = asyncio.run(_read(args.url, args.namespace, args.key, args.readers, args.text,
                               args.load_timeout))
    print(json.dumps(result, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
