"""GET /v1/jobs/{id}/events on a real socket: pushed as the job changes, resumed with
Last-Event-ID without gap or repeat, ended when the job is final; one LISTEN connection
for every stream of the process; a disconnect frees the stream at once."""

import asyncio
import json
import threading

import httpx
from httpx_sse import aconnect_sse, connect_sse
from servicekit import auth, wait_until

from cachequeue import db
from cachequeue.queue import jobs, notify
from cachequeue.service.routers import jobs as jobs_routes


def read(source, count):
    """The next `count` events of a stream as (id, event, state)."""
    found = []
    for sse in source:
        found.append((sse.id, sse.event, json.loads(sse.data)["state"]))
        if len(found) == count:
            return found
    return found


def test_events_are_pushed_as_the_job_changes_and_the_stream_ends_when_final(live, conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with live.client() as http, connect_sse(http, "GET", f"/v1/jobs/{job_id}/events",
                                            headers=auth(11)) as source:
        assert source.response.headers["content-type"].startswith("text/event-stream")
        events = source.iter_sse()
        first = next(events)
        assert (first.id, first.event, first.retry) == ("1", "accepted", 1000)
        assert json.loads(first.data) == {
            "job_id": job_id, "seq": 1, "event": "accepted", "state": "pending", "attempt": 0,
            "at": json.loads(first.data)["at"], "error": None}
        claim = jobs.claim(conn, lease=30)          # each change arrives while we wait
        assert read(events, 1) == [("2", "started", "running")]
        jobs.finish(conn, claim, {"ok": True})
        assert read(events, 1) == [("3", "done", "done")]
        assert list(events) == [], "the stream ends after the final event"


def test_last_event_id_resumes_with_no_gap_and_no_repeat(live, conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    url = f"/v1/jobs/{job_id}/events"
    with live.client() as http:
        with connect_sse(http, "GET", url, headers=auth(11)) as source:
            seen = read(source.iter_sse(), 1)   # then the client goes away
        claim = jobs.claim(conn, lease=30)
        jobs.fail(conn, claim, "flaky vendor")
        with connect_sse(http, "GET", url, headers=auth(11) | {"Last-Event-ID": seen[-1][0]}) as source:
            seen += read(source.iter_sse(), 2)
        conn.execute("UPDATE jobs SET run_after = cq_now() WHERE id = %s", [job_id])
        jobs.finish(conn, jobs.claim(conn, lease=30), {})
        with connect_sse(http, "GET", url, headers=auth(11) | {"Last-Event-ID": "3"}) as source:
            rest = [(s.id, s.event) for s in source.iter_sse()]
        assert rest == [("4", "started"), ("5", "done")]
        final = http.get(url, headers=auth(11) | {"Last-Event-ID": "5"})
        assert final.status_code == 204, "nothing more: an EventSource stops reconnecting"
        assert http.get(url, headers=auth(11) | {"Last-Event-ID": "five"}).status_code == 400
    assert seen == [("1", "accepted", "pending"), ("2", "started", "running"),
                    ("3", "retrying", "pending")]


def test_one_listen_connection_serves_every_stream_and_wakes_only_the_changed_one(
        live, conn, schema, monkeypatch):
    reads = []

    def counted(connection, **kw):
        reads.append(kw["job_id"])
        return jobs_routes.history.__wrapped__(connection, **kw)

    counted.__wrapped__ = jobs_routes.history
    monkeypatch.setattr(jobs_routes, "history", counted)
    ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n}) for n in range(20)]
    channel = notify.channel(conn)

    async def scenario():
        async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
            streams = [aconnect_sse(http, "GET", f"/v1/jobs/{i}/events", headers=auth(11))
                       for i in ids]
            sources = [await s.__aenter__() for s in streams]
            iters = [src.aiter_sse() for src in sources]
            assert [(await anext(it)).event for it in iters] == ["accepted"] * 20
            await asyncio.to_thread(wait_until, lambda: len(reads) >= 20, 10, "first reads")
            listeners = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query = %s",
                [f'LISTEN "{channel}"']).fetchone()[0]
            before = len(reads)
            claim = await asyncio.to_thread(jobs.claim, conn, lease=30)  # the oldest: ids[0]
            assert (await anext(iters[0])).event == "started"
            woken = reads[before:]
            for s in streams:
                await s.__aexit__(None, None, None)
            return listeners, claim, woken

    listeners, claim, woken = asyncio.run(scenario())
    assert claim.job_id == ids[0]
    assert listeners == 1, "20 streams, one LISTEN connection"
    assert woken and set(woken) == {ids[0]}, "only the stream of the changed job read again"


def test_a_client_that_disconnects_frees_its_stream_and_connection(live, conn):
    ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n}) for n in range(10)]
    pool = live.service.pool

    async def scenario():
        async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
            streams = [aconnect_sse(http, "GET", f"/v1/jobs/{i}/events", headers=auth(11))
                       for i in ids]
            iters = [(await s.__aenter__()).aiter_sse() for s in streams]  # kept: open
            for it in iters:
                await anext(it)
            open_ = live.service.hub.streams
            for s in streams:
                await s.__aexit__(None, None, None)
            return open_

    assert asyncio.run(scenario()) == 10
    wait_until(lambda: live.service.hub.streams == 0, what="every subscription dropped")
    stats = pool.get_stats()
    assert stats["pool_size"] == stats["pool_available"], "no connection held by a stream"


def test_a_lost_listen_connection_is_replaced_and_nothing_is_missed(live, conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    listening = [f'LISTEN "{notify.channel(conn)}"']
    find = "SELECT pid FROM pg_stat_activity WHERE query = %s"
    with live.client() as http, connect_sse(http, "GET", f"/v1/jobs/{job_id}/events",
                                            headers=auth(11)) as source:
        events = source.iter_sse()
        assert next(events).event == "accepted"
        [(listener,)] = conn.execute(find, listening).fetchall()
        # Wait (up to 5 s) until that session is gone, then change the job: its
        # notification goes to nobody. The re-read after the reconnect must find it.
        assert conn.execute("SELECT pg_terminate_backend(%s, 5000)", [listener]).fetchone()[0]
        jobs.claim(conn, lease=30)
        assert read(events, 1) == [("2", "started", "running")]

    def replaced():
        with db.connect() as admin:
            return [r[0] for r in admin.execute(find, listening)]
    pids = wait_until(replaced, what="a new LISTEN session")
    assert len(pids) == 1 and pids != [listener]


def test_shutdown_ends_open_streams_so_the_server_need_not_wait(live, conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    ended = threading.Event()
    with live.client() as http, connect_sse(http, "GET", f"/v1/jobs/{job_id}/events",
                                            headers=auth(11)) as source:
        events = source.iter_sse()
        assert next(events).event == "accepted"
        live.service.hub.close()  # what `cachequeue serve` does on SIGINT/SIGTERM
        assert list(events) == []
        ended.set()
    assert ended.is_set() and jobs.status(conn, tenant_id=1, job_id=job_id).state == "pending"


def test_many_streams_of_one_job_share_their_re_reads(make_live, conn, monkeypatch):
    """60 streams on one job: a change wakes all 60, and they share the job's read
    (streamreads) instead of making 60 reads that compete with requests."""
    reads = []

    def counted(connection, **kw):
        reads.append(kw["job_id"])
        return counted.__wrapped__(connection, **kw)

    counted.__wrapped__ = jobs_routes.history
    monkeypatch.setattr(jobs_routes, "history", counted)
    live = make_live(max_in_flight=100)  # the 60 openings are not shed
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    url = f"/v1/jobs/{job_id}/events"
    streams = 60

    async def main():
        opened, started = [], []

        async def follow(client):
            async with aconnect_sse(client, "GET", url, headers=auth(11)) as source:
                async for sse in source.aiter_sse():
                    (opened if sse.event == "accepted" else started).append(sse.event)
                    if sse.event == "started":
                        return

        limits = httpx.Limits(max_connections=streams + 5)
        async with httpx.AsyncClient(base_url=live.url, limits=limits, timeout=60) as client:
            tasks = [asyncio.ensure_future(follow(client)) for _ in range(streams)]
            for _ in range(2000):
                if len(opened) == streams or all(t.done() for t in tasks):
                    break
                await asyncio.sleep(0.01)
            before = len(reads)
            await asyncio.to_thread(jobs.claim, conn, lease=30)
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
        return len(opened), len(started), len(reads) - before

    opened, started, woken_reads = asyncio.run(main())
    assert (opened, started) == (streams, streams)
    assert woken_reads < streams // 4, f"{woken_reads} reads for {streams} streams of one job"


def test_a_stream_whose_re_read_keeps_failing_ends_cleanly_with_a_retry_hint(
        live, conn, monkeypatch, caplog):
    """The database stays away longer than STREAM_OUTAGE_SECONDS (0 here): the started 200
    ends with a comment and `retry:`, no exception; the client resumes with Last-Event-ID."""
    import psycopg

    calls = []

    def failing(connection, **kw):
        calls.append(kw["after"])
        if len(calls) > 1:  # the opening read works, every re-read fails
            raise psycopg.OperationalError("the database went away")
        return failing.__wrapped__(connection, **kw)

    failing.__wrapped__ = jobs_routes.history
    monkeypatch.setattr(jobs_routes, "history", failing)
    monkeypatch.setattr(jobs_routes, "STREAM_OUTAGE_SECONDS", 0.0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    url = f"/v1/jobs/{job_id}/events"
    with live.client() as http, http.stream("GET", url, headers=auth(11)) as response:
        lines = response.iter_lines()
        seen = []
        for line in lines:
            seen.append(line)
            if line.startswith("data:"):
                break
        jobs.claim(conn, lease=30)  # wakes the stream: its re-read fails
        seen += list(lines)  # ends: the iteration stops
    monkeypatch.setattr(jobs_routes, "history", failing.__wrapped__)
    with live.client() as http, connect_sse(http, "GET", url,
                                            headers=auth(11) | {"Last-Event-ID": "1"}) as source:
        resumed = read(source.iter_sse(), 1)
    assert response.status_code == 200
    assert any(line.startswith(": the stream ends here") for line in seen), seen
    assert "retry: 1000" in seen[-3:] or "retry: 1000" in seen, seen
    assert not any(line.startswith("event: started") for line in seen)
    assert resumed == [("2", "started", "running")]
    assert [r.getMessage() for r in caplog.records if r.levelno >= 40] == []
