"""Event streams under load and across a database restart (issue 32, item 1): 300 streams
on a private server, every job claimed in one statement (300 wake-ups at once, far over
the 32 requests the service serves before it sheds) while the database is stopped and
started again, then every job finished in a burst. Every stream delivers every state
change and its final event, with no reconnect and no server error in the log; the
re-reads of one wake-up are shared and wait for their slots instead of being shed.

Loopback only, and it stops by itself: every wait has a deadline."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from httpx_sse import aconnect_sse
from servicekit import auth, serve, stop

from cachequeue import db, embedded
from cachequeue.course.app import webapp
from cachequeue.queue import jobs

STREAMS = 300


async def follow(client: httpx.AsyncClient, job_id: int, opened: set, seen: dict,
                 counts: dict) -> None:
    """An EventSource's behaviour: open (again after a 503 with Retry-After, as a polite
    client does), read until the final event, reconnect with Last-Event-ID if the stream
    ends before it."""
    last = None
    while True:
        headers = auth(11) | ({"Last-Event-ID": last} if last else {})
        async with aconnect_sse(client, "GET", f"/v1/jobs/{job_id}/events",
                                headers=headers) as source:
            status = source.response.status_code
            if status == 503:  # shed at the opening: a status code, before any event
                counts["refused_openings"] += 1
                await asyncio.sleep(float(source.response.headers["retry-after"]))
                continue
            assert status == 200, (job_id, status)
            async for sse in source.aiter_sse():
                if not sse.event:  # a comment or a retry hint only
                    continue
                seen[job_id].append(sse.event)
                last = sse.id
                opened.add(job_id)
                if sse.event in ("done", "failed", "cancelled"):
                    return
        counts["reconnects"] += 1
        await asyncio.sleep(1.0)  # the retry: hint


async def until(condition, timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError(f"{what} did not hold within {timeout} s")
        await asyncio.sleep(0.05)


async def run(url: str, ids: list[int], server, schema: str) -> tuple[dict, dict]:
    opened: set[int] = set()
    seen: dict[int, list[str]] = {job_id: [] for job_id in ids}
    counts = {"refused_openings": 0, "reconnects": 0}
    limits = httpx.Limits(max_connections=len(ids) + 10, max_keepalive_connections=0)
    timeout = httpx.Timeout(30.0, read=240.0)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        tasks = [asyncio.ensure_future(follow(client, job_id, opened, seen, counts))
                 for job_id in ids]
        try:
            await until(lambda: len(opened) == len(ids), 180, "every stream opened")

            def claim_then_restart() -> list:
                with db.connect(schema, url=server.url) as conn:
                    claims = jobs.claim_many(conn, len(ids), lease=600)
                # The burst of wake-ups is under way: the database goes away under it.
                server.stop("fast")
                server.start()
                return claims

            claims = await asyncio.to_thread(claim_then_restart)
            assert len(claims) == len(ids)

            def finish_all() -> None:
                with db.connect(schema, url=server.url) as conn:
                    for claim in claims:
                        assert jobs.finish(conn, claim, {"ok": True})

            await asyncio.to_thread(finish_all)
            await asyncio.wait_for(asyncio.gather(*tasks), 240)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return seen, counts


@pytest.mark.private_server  # the server it restarts is its own
def test_300_streams_reach_their_final_event_through_a_burst_and_a_restart(caplog):
    schema = "svc_load"
    with embedded.Server.private() as server:
        app = webapp.create_app(schema, url=server.url, max_streams=0)  # 300 of one tenant
        uv, thread, url = serve(app)[:3]
        try:
            with db.connect(schema, url=server.url) as conn:
                ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
                       for n in range(STREAMS)]
            seen, counts = asyncio.run(run(url, ids, server, schema))
            reads = getattr(app.state.service, "stream_reads", None)
        finally:
            stop(app, uv, thread)
    assert {job_id: events for job_id, events in seen.items()
            if events != ["accepted", "started", "done"]} == {}
    assert counts["reconnects"] == 0, counts
    errors = [r.getMessage()[:200] for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    # Every wake-up read once per job at most: no more reads than wake-ups need.
    assert reads.reads <= 4 * STREAMS, reads.reads
