"""HTTP service latency: POST /v1/jobs at 1/16/64 clients, no-op vs 5-second jobs; SSE delivery with 200 streams.

Usage: .venv/bin/python bench/api_latency.py [--rounds 8] [--streams 200] [--scale 1.0]

Everything is real and on this machine: `cachequeue serve` (one uvicorn process) with two
`cachequeue worker` processes (concurrency 4 each) on the embedded PostgreSQL (or
DATABASE_URL), and httpx clients in this process on loopback.

POST: for each number of concurrent clients (keep-alive connections, a minimal asyncio
HTTP/1.1 client, so that the client's own cost stays small), the same number of `POST /v1/jobs` for
`noop` jobs and for `pause` jobs of 5 seconds, in `--rounds` short alternating runs, while
the workers run what was submitted (the 5-second jobs pile up, as they would, and are
cancelled after each run). Accepting a job
is one INSERT; it must not depend on how long the job will take: the ratio of the
latencies (5 s / no-op) should stay <= 1.2. `GET /healthz` at the same concurrency (no
database) is the floor that uvicorn, FastAPI and the client cost by themselves.

SSE: a second service (no workers) on its own schema; `--streams` clients (httpx and
httpx-sse, in this process) each follow a job of their own over one process's event
streams. This script changes the jobs itself
(claim, then finish), one at a time ("steady", about 5 ms apart) and then all in one
statement ("burst": every stream is woken at once), and measures from just before the
changing statement to the moment the client has parsed the event. It also counts the
LISTEN connections the service holds (one, whatever the number of streams).
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
from pathlib import Path

import httpx
from httpx_sse import aconnect_sse

from cachequeue import db, sqlfile
from cachequeue.course import chapter
from cachequeue.course.app import webapp
from cachequeue.course.procs.stack import SUMMARY_HANDLERS_SPEC, Stack, listen_sessions
from cachequeue.queue import jobs

HERE = sqlfile.parse(Path(__file__).with_suffix(".sql").read_text(encoding="utf-8"),
                     "bench/api_latency.sql")
TOKEN = webapp.bearer(11)  # 李雷, a member of tenant 1
LEVELS = (1, 16, 64)
# `cachequeue serve`'s per-tenant limits (0 = off): the bench measures the service, not its limits.
UNLIMITED = {"submit_rate": 0, "max_pending": 0, "max_streams": 0}

KINDS = {"noop": {"kind": "noop", "payload": {}},
         "pause_5s": {"kind": "pause", "payload": {"seconds": 5}}}


def summary(samples: list[float], seconds: float | None = None) -> dict:
    ordered = sorted(samples)
    out = {"n": len(ordered), "p50_ms": round(1000 * statistics.median(ordered), 2),
           "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2),
           "max_ms": round(1000 * ordered[-1], 2)}
    if seconds:
        out["per_second"] = round(len(ordered) / seconds, 1)
    return out


def request_bytes(method: str, path: str, body: dict | None) -> bytes:
    """One HTTP/1.1 request, keep-alive, as bytes (written as is, again and again)."""
    data = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1",
             *(f"{k}: {v}" for k, v in TOKEN.items())]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


async def load(url: str, clients: int, count: int, method: str, path: str,
               body: dict | None) -> tuple[list[float], float]:
    """`count` requests from `clients` concurrent keep-alive connections; their latencies
    and the wall time. The client is a few lines over asyncio streams, not httpx: at 64
    connections httpx's own overhead, not the service, would set the pace."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    request = request_bytes(method, path, body)
    latencies: list[float] = []
    left = iter(range(count))

    async def client() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for _ in left:
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                answer = await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                if status not in (200, 202):
                    raise RuntimeError(f"{method} {path}: {status} {answer[:200]!r}")
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, time.perf_counter() - started


def cancel_waiting(conn) -> int:
    """Cancel the 5-second jobs still pending or running, so the next run starts level."""
    ids = [r[0] for r in conn.execute(HERE["waiting_pauses"].sql)]
    for job_id in ids:
        jobs.cancel(conn, tenant_id=1, job_id=job_id, actor="bench", reason="next run")
    return len(ids)


def post_latency(rounds: int, scale: float) -> dict:
    schema = "bench_api"
    with db.connect() as conn:
        chapter.reset(conn, schema)
    out: dict = {}
    with Stack(schema) as stack, db.connect(schema) as conn:
        # One tenant floods the service on purpose: its per-tenant limits are off here.
        url = stack.start_api(access_log=False, workers=2, handlers=SUMMARY_HANDLERS_SPEC,
                              concurrency=4, **UNLIMITED).url
        asyncio.run(load(url, 8, 200, "POST", "/v1/jobs", KINDS["noop"]))  # warm up
        for clients in LEVELS:
            # Small runs, alternated: a machine that gets busier or quieter meanwhile
            # (it is shared) weighs on both kinds alike.
            count = max(50, int(40 * clients * scale) // rounds)
            samples: dict[str, list[float]] = {"noop": [], "pause_5s": [], "healthz": []}
            wall = dict.fromkeys(samples, 0.0)
            for round_ in range(rounds):
                order = list(KINDS) if round_ % 2 == 0 else list(reversed(KINDS))
                for name in order:
                    got, seconds = asyncio.run(load(url, clients, count, "POST", "/v1/jobs",
                                                    KINDS[name]))
                    samples[name] += got
                    wall[name] += seconds
                    if name == "pause_5s":
                        cancel_waiting(conn)
                got, seconds = asyncio.run(load(url, clients, count // 2, "GET", "/healthz",
                                                None))
                samples["healthz"] += got
                wall["healthz"] += seconds
            level = {name: summary(s, wall[name]) for name, s in samples.items()}
            level["ratio_p50"] = round(level["pause_5s"]["p50_ms"] / level["noop"]["p50_ms"], 3)
            level["ratio_p99"] = round(level["pause_5s"]["p99_ms"] / level["noop"]["p99_ms"], 3)
            out[str(clients)] = level
            print(json.dumps({"clients": clients, **level}), file=sys.stderr, flush=True)
        jobs_total = conn.execute(HERE["job_count"].sql).fetchone()[0]
    with db.connect() as conn:
        db.drop_schema(conn, schema)
    out["jobs_submitted"] = jobs_total
    return out


async def follow(http: httpx.AsyncClient, job_id: int, ready: asyncio.Event, opened: list,
                 arrivals: dict, want: int) -> None:
    async with aconnect_sse(http, "GET", f"/v1/jobs/{job_id}/events", headers=TOKEN) as source:
        async for sse in source.aiter_sse():
            if sse.event == "accepted":
                opened.append(job_id)
                if len(opened) == want:
                    ready.set()
            else:
                arrivals[(job_id, sse.event)] = time.perf_counter()


async def sse_delivery(url: str, schema: str, streams: int) -> dict:
    with db.connect(schema) as conn:
        ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
               for n in range(2 * streams)]
    steady_ids, burst_ids = ids[:streams], ids[streams:]
    arrivals: dict[tuple[int, str], float] = {}
    limits = httpx.Limits(max_connections=streams + 10)
    out: dict = {"streams": streams}
    for label, group in (("steady", steady_ids), ("burst", burst_ids)):
        # A new client per group: a connection kept alive from the first group may have
        # been closed by the server meanwhile (uvicorn's keep-alive timeout).
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
            marks: dict[tuple[int, str], float] = {}
            ready, opened = asyncio.Event(), []
            tasks = [asyncio.create_task(follow(http, i, ready, opened, arrivals, len(group)))
                     for i in group]
            await asyncio.wait_for(ready.wait(), 120)
            health = (await http.get("/healthz")).json()
            await asyncio.to_thread(change, schema, group, label == "burst", marks)
            await asyncio.wait_for(asyncio.gather(*tasks), 120)
            delays = [arrivals[key] - marks[key] for key in marks]
            out[label] = {"open_streams_seen_by_healthz": health["streams"],
                          "events": len(delays), **summary(delays)}
            with db.connect(schema) as conn:
                out["listen_connections"] = listen_sessions(conn)
    return out


held: dict[int, jobs.Claim] = {}  # claims made by change(), until it finishes them


def change(schema: str, group: list[int], burst: bool, marks: dict) -> None:
    """Claim, then finish, each job of `group` (they are the only pending ones): one at a
    time, or all of them in one statement each; note when each statement started."""
    with db.connect(schema) as conn:
        if burst:
            started = time.perf_counter()
            claims = jobs.claim_many(conn, len(group), lease=300)
            marks.update({(c.job_id, "started"): started for c in claims})
            started = time.perf_counter()
            jobs.finish_many(conn, [(c, {}) for c in claims])
            marks.update({(c.job_id, "done"): started for c in claims})
            return
        for step in ("started", "done"):
            for job_id in group:
                time.sleep(0.005)
                started = time.perf_counter()
                if step == "started":
                    claim = jobs.claim(conn, lease=300)
                    assert claim.job_id in group
                    marks[(claim.job_id, "started")] = started
                    held[claim.job_id] = claim
                else:
                    jobs.finish(conn, held.pop(job_id), {})
                    marks[(job_id, "done")] = started


def sse_latency(streams: int) -> dict:
    schema = "bench_sse"
    with db.connect() as conn:
        chapter.reset(conn, schema)
    with Stack(schema) as stack:
        url = stack.start_api(access_log=False, **UNLIMITED).url
        out = asyncio.run(sse_delivery(url, schema, streams))
    with db.connect() as conn:
        db.drop_schema(conn, schema)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8,
                        help="alternating runs per kind and number of clients")
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="requests per kind = 40 x clients x scale (at least 50 a run)")
    args = parser.parse_args(argv)
    db.database_url(start=True)  # set-up: start the embedded server unless DATABASE_URL is set
    if args.rounds < 1 or args.streams < 1 or args.scale <= 0:
        parser.error("--rounds and --streams must be >= 1, --scale > 0")
    load_before = os.getloadavg()
    post = post_latency(args.rounds, args.scale)
    ratios = [post[str(c)]["ratio_p50"] for c in LEVELS]
    out = {
        "post": post,
        "accept_ratio_p50_max": max(ratios),
        "accept_independent_of_job_length": max(ratios) <= 1.2,
        "sse": sse_latency(args.streams),
    }
    with db.connect() as conn:
        out["server"] = "PostgreSQL " + db.server_version(conn, short=True)
    out["machine"] = {"cpus": os.cpu_count(), "load_average_before": load_before,
                      "load_average_after": os.getloadavg(),
                      "python": platform.python_version(),
                      **{name: version(name) for name in ("fastapi", "uvicorn", "httpx")}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
