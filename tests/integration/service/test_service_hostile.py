"""Hostile input on a real socket (issue 18, items 3 and 6): the token is checked before a
body is read, every body is capped, no answer echoes its request at length, and inputs
that used to reach the database unchecked (far and past run_after, deep JSON, huge
integers, NUL in a kind, a non-ASCII Last-Event-ID) get a 4xx problem and write nothing."""

import json
import socket
import time

import pytest
from servicekit import auth

from cachequeue.queue import jobs
from cachequeue.service.problems import MAX_DETAIL_CHARS


def count_jobs(conn) -> int:
    return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]


def first_answer(url: str, head: str, body: bytes, timeout: float = 5.0) -> tuple[str, float]:
    """Send a request head and only the start of its body; the status code that comes back
    before the rest is sent, and how long it took (TimeoutError: the server waited)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        started = time.monotonic()
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        data = sock.recv(4096)
        return data.split(b" ", 2)[1].decode(), time.monotonic() - started


def head(path: str, length: int, extra: str = "") -> str:
    return (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n{extra}")


@pytest.mark.parametrize("path", ["/v1/documents/42/summaries", "/v1/jobs"])
def test_no_token_is_answered_before_the_body_is_read(live, conn, path):
    status, took = first_answer(live.url, head(path, 100_000), b"{" * 1000)
    assert status == "401" and took < 5
    assert count_jobs(conn) == 0


def test_a_summary_body_is_capped_before_it_is_read(live, conn):
    token = auth(11)["Authorization"]
    status, _ = first_answer(live.url, head("/v1/documents/42/summaries", 100_000,
                                            f"Authorization: {token}\r\n"), b"{")
    assert status == "413"
    assert count_jobs(conn) == 0


def test_every_route_caps_its_body(live):
    # A GET never reads its body, and still may not be sent more than the cap.
    status, _ = first_answer(live.url, "GET /healthz HTTP/1.1\r\nHost: t\r\n"
                             "Content-Length: 10000000\r\n", b"x")
    assert status == "413"


def test_no_answer_echoes_its_request_at_length(live, conn):
    long = "x" * 5_000
    with live.client() as http:
        answers = [
            http.post("/v1/documents/42/summaries", json={"template": long}, headers=auth(11)),
            http.post("/v1/documents/42/summaries", json={long: 1}, headers=auth(11)),
            http.post("/v1/jobs", json={"kind": "noop", long: 1}, headers=auth(11)),
            http.post("/v1/jobs", json={"kind": "noop", "run_after": long}, headers=auth(11)),
            http.post("/v1/jobs", json={"kind": long[:100] + "\u0000"}, headers=auth(11)),
            http.get("/v1/jobs/1/events", headers=auth(11) | {"Last-Event-ID": long}),
        ]
    for answer in answers:
        assert 400 <= answer.status_code < 500, answer.text[:200]
        assert answer.headers["content-type"] == "application/problem+json"
        assert len(answer.json()["detail"]) <= MAX_DETAIL_CHARS and long not in answer.text
    assert count_jobs(conn) == 0


def deep(levels: int) -> bytes:
    return b'{"kind": "noop", "payload": {"a": ' + b"[" * levels + b"]" * levels + b"}}"


@pytest.mark.parametrize("body, status, code", [
    (json.dumps({"kind": "noop", "run_after": "9999-12-31T23:59:59-14:00"}).encode(), 422,
     "invalid_job"),
    (json.dumps({"kind": "noop", "run_after": "2027-12-31T00:00:00+00:00"}).encode(), 422,
     "invalid_job"),
    (json.dumps({"kind": "noop", "run_after": 400 * 86400}).encode(), 422, "invalid_job"),
    (deep(5_000), 400, "malformed_json"),
    (deep(40), 400, "malformed_json"),
    (b'{"kind": "noop", "payload": {"n": ' + b"9" * 5_000 + b"}}", 400, "malformed_json"),
    (json.dumps({"kind": "no\u0000op"}).encode(), 422, "invalid_job"),
    (json.dumps({"kind": "noop\ud800"}).encode(), 422, "invalid_job"),
])
def test_inputs_that_reached_the_database_unchecked_are_4xx_problems(live, conn, body, status,
                                                                     code):
    with live.client() as http:
        answer = http.post("/v1/jobs", content=body,
                           headers=auth(11) | {"Content-Type": "application/json"})
    assert (answer.status_code, answer.headers["content-type"]) == (status,
                                                                    "application/problem+json")
    assert answer.json()["code"] == code
    assert count_jobs(conn) == 0


def test_a_past_run_after_does_not_jump_the_queue(live, conn):
    waiting = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with live.client() as http:
        early = http.post("/v1/jobs", json={"kind": "noop", "run_after": "2000-01-01T00:00:00Z"},
                          headers=auth(20))
    assert early.status_code == 202
    assert [jobs.claim(conn).job_id for _ in range(2)] == [waiting, early.json()["id"]]


def test_a_non_ascii_last_event_id_is_a_400(live, conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with live.client() as http:
        for value in (b"\xb2", "１".encode(), b"\xd9\xa3"):  # superscript two, full-width, Arabic 3
            answer = http.get(f"/v1/jobs/{job_id}/events",
                              headers=auth(11) | {"Last-Event-ID": value})
            assert answer.status_code == 400, value
            assert answer.json()["code"] == "bad_last_event_id"
