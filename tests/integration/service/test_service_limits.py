"""Per-tenant limits over HTTP (issue 32, item 2): a submit rate and a cap on pending jobs
(429 problem+json with Retry-After, nothing written), a cap on open event streams; the
other tenant is not held by the first one's limits."""

import threading

from httpx_sse import connect_sse
from servicekit import auth

from cachequeue.queue import jobs

NOOP = {"kind": "noop", "payload": {}}


def count(conn, tenant_id):
    return conn.execute("SELECT count(*) FROM jobs WHERE tenant_id = %s", [tenant_id]).fetchone()[0]


def test_the_submit_rate_answers_429_with_retry_after_and_writes_nothing(make_live, conn):
    live = make_live(submit_rate=0.01, submit_burst=2)
    with live.client() as http:
        answers = [http.post("/v1/jobs", json=NOOP, headers=auth(11)) for _ in range(3)]
        summary = http.post("/v1/documents/42/summaries", headers=auth(12))
        other = http.post("/v1/jobs", json=NOOP, headers=auth(20))
    assert [a.status_code for a in answers] == [202, 202, 429]
    refused = answers[2]
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1
    assert (summary.status_code, summary.json()["code"]) == (429, "rate_limited")
    assert other.status_code == 202
    assert (count(conn, 1), count(conn, 2)) == (2, 1)


def test_the_submit_rate_holds_across_processes_of_one_service(make_live, conn):
    # Two app instances (two pools, two processes' worth of state) on one database: the
    # bucket is a row there, so together they admit the burst once, not once each.
    one, two = make_live(submit_rate=0.01, submit_burst=3), make_live(submit_rate=0.01,
                                                                      submit_burst=3)
    with one.client() as a, two.client() as b:
        answers = [http.post("/v1/jobs", json=NOOP, headers=auth(11))
                   for http in (a, b, a, b, a, b)]
        summary = b.post("/v1/documents/42/summaries", headers=auth(12))
    assert [r.status_code for r in answers] == [202, 202, 202, 429, 429, 429]
    assert {r.json()["code"] for r in answers[3:]} == {"rate_limited"}
    assert (summary.status_code, summary.json()["code"]) == (429, "rate_limited")
    assert count(conn, 1) == 3
    tokens = conn.execute("SELECT tokens FROM tenant_submit_buckets WHERE tenant_id = 1")
    assert tokens.fetchone()[0] < 1


def test_a_refused_submit_keeps_its_token(make_live, conn):
    live = make_live(submit_rate=0.01, submit_burst=2)
    with live.client() as http:
        unknown = http.post("/v1/jobs", json={"kind": "translate"}, headers=auth(11))
        answers = [http.post("/v1/jobs", json=NOOP, headers=auth(11)) for _ in range(3)]
    assert unknown.status_code == 422  # rolled back with its transaction: no token spent
    assert [r.status_code for r in answers] == [202, 202, 429]


def test_the_pending_cap_answers_429_and_holds_under_concurrent_submits(make_live, conn):
    live = make_live(max_pending=5, max_in_flight=100)
    got = []

    def submit(n):
        with live.client() as http:
            got.append(http.post("/v1/jobs", json={"kind": "noop", "payload": {"n": n}},
                                 headers=auth(11)))

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    statuses = sorted(a.status_code for a in got)
    assert statuses == [202] * 5 + [429] * 15
    assert {a.json()["code"] for a in got if a.status_code == 429} == {"too_many_pending"}
    assert count(conn, 1) == 5  # exactly the cap, however the 20 interleaved
    with live.client() as http:
        keyed = http.post("/v1/jobs", json=NOOP, headers=auth(11) | {"Idempotency-Key": "k1"})
        other = http.post("/v1/jobs", json=NOOP, headers=auth(20))
        jobs.finish(conn, jobs.claim(conn, lease=30), {})  # one runs: room for one more
        after = http.post("/v1/jobs", json=NOOP, headers=auth(11) | {"Idempotency-Key": "k1"})
        repeat = http.post("/v1/jobs", json=NOOP, headers=auth(11) | {"Idempotency-Key": "k1"})
    assert keyed.status_code == 429 and other.status_code == 202
    assert after.status_code == 202
    assert repeat.status_code == 202 and repeat.json()["id"] == after.json()["id"]  # a repeat


def test_the_stream_cap_answers_429_before_the_stream_and_frees_on_close(make_live, conn):
    live = make_live(max_streams=2)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    other_job = jobs.submit(conn, tenant_id=2, kind="noop", payload={})
    url = f"/v1/jobs/{job_id}/events"
    with live.client() as http:
        with connect_sse(http, "GET", url, headers=auth(11)) as one, \
                connect_sse(http, "GET", url, headers=auth(12)) as two:
            kept = [one.iter_sse(), two.iter_sse()]  # a dropped iterator closes its stream
            assert [next(events).event for events in kept] == ["accepted", "accepted"]
            third = http.get(url, headers=auth(11))
            with connect_sse(http, "GET", f"/v1/jobs/{other_job}/events",
                             headers=auth(20)) as elsewhere:
                assert next(elsewhere.iter_sse()).event == "accepted"
        assert (third.status_code, third.json()["code"]) == (429, "too_many_streams")
        assert third.headers["retry-after"] == "1"
        for _ in range(500):  # the server notices the closed streams
            if live.service.limits.streams(1) == 0:
                break
            threading.Event().wait(0.01)
        with connect_sse(http, "GET", url, headers=auth(11)) as again:
            assert next(again.iter_sse()).event == "accepted"
