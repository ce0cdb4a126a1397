"""Smaller edges of the HTTP service (issue 32, item 8): bodies that are not UTF-8 JSON
(a byte order mark, UTF-16, a key twice) and two Idempotency-Key headers are refused with
nothing written; a tenant cancels its own job over HTTP (and only its own)."""

import json

import pytest
from servicekit import auth

from cachequeue.queue import jobs


def rows(conn):
    return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]


@pytest.mark.parametrize("body, said", [
    (b"\xef\xbb\xbf" + json.dumps({"kind": "noop"}).encode(), "not valid JSON"),
    (json.dumps({"kind": "noop"}).encode("utf-16"), "not UTF-8"),
    (json.dumps({"kind": "noop"}).encode("utf-16-le"), "not valid JSON"),
    (b'{"kind": "noop", "kind": "effect"}', "the key 'kind' twice"),
    (b'{"kind": "noop", "payload": {"a": 1, "a": 2}}', "the key 'a' twice"),
])
def test_bodies_that_are_not_plain_utf8_json_are_400(live, conn, body, said):
    with live.client() as http:
        answer = http.post("/v1/jobs", content=body,
                           headers=auth(11) | {"Content-Type": "application/json"})
    assert (answer.status_code, answer.json()["code"]) == (400, "malformed_json"), answer.text
    assert said in answer.json()["detail"]
    assert rows(conn) == 0


def test_two_idempotency_key_headers_are_400(live, conn):
    with live.client() as http:
        answer = http.post("/v1/jobs", json={"kind": "noop"},
                           headers=[*auth(11).items(), ("Idempotency-Key", "a"),
                                    ("Idempotency-Key", "b")])
    assert (answer.status_code, answer.json()["code"]) == (400, "bad_idempotency_key")
    assert rows(conn) == 0


def test_a_tenant_cancels_its_own_job_and_nobody_elses(live, conn):
    mine = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    theirs = jobs.submit(conn, tenant_id=2, kind="noop", payload={})
    with live.client() as http:
        other = http.post(f"/v1/jobs/{theirs}/cancel", headers=auth(11))
        missing = http.post("/v1/jobs/999999/cancel", headers=auth(11))
        done = http.post(f"/v1/jobs/{mine}/cancel", headers=auth(11))
        again = http.post(f"/v1/jobs/{mine}/cancel", headers=auth(11))
        nobody = http.post(f"/v1/jobs/{mine}/cancel")
    assert other.status_code == 404 and other.json() == {**missing.json(),
                                                         "detail": f"no job {theirs}"}
    assert (done.status_code, done.json()["state"]) == (200, "cancelled")
    assert (again.status_code, again.json()["code"]) == (409, "not_cancellable")
    assert nobody.status_code == 401
    assert jobs.status(conn, tenant_id=2, job_id=theirs).state == "pending"
    audit = conn.execute("SELECT actor FROM job_audit WHERE job_id = %s", [mine]).fetchall()
    assert audit == [("api:user:11",)]


def test_a_bad_last_event_id_is_quoted_as_it_was_sent(live, conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with live.client() as http:
        answer = http.get(f"/v1/jobs/{job_id}/events",
                          headers=auth(11) | {"Last-Event-ID": "²".encode()})
    assert (answer.status_code, answer.json()["code"]) == (400, "bad_last_event_id")
    assert answer.json()["detail"].endswith("got '²'"), answer.json()["detail"]


@pytest.mark.parametrize("body, said, unsaid", [
    ('{"kind": "noop", "run_after": "9999-12-31T23:59:59-14:00"}',
     "9999-12-31T23:59:59-14:00", "datetime."),
    ('{"kind": "noop", "payload": {"a": "x\\ud800"}}', "lone surrogate", "codec"),
])
def test_details_say_what_was_sent_not_a_python_repr(live, conn, body, said, unsaid):
    with live.client() as http:
        answer = http.post("/v1/jobs", content=body.encode(),
                           headers=auth(11) | {"Content-Type": "application/json"})
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_job"), answer.text
    assert said in answer.json()["detail"] and unsaid not in answer.json()["detail"]
    assert rows(conn) == 0


def test_an_unexpected_error_is_a_500_and_its_connection_stays_usable(schema, caplog):
    """A bug in a route is a 500 problem, logged with its type; the kept-alive connection
    is not closed under the client (uvicorn closes it when the application raises, and the
    client's next request met a reset: chapter 07's refused commit)."""
    import socket

    from fastapi import APIRouter
    from servicekit import serve, stop

    from cachequeue import service

    router = APIRouter()

    @router.get("/boom")
    async def boom():
        raise RuntimeError("a bug")

    app = service.create_app(schema, service.TokenTable({}), routers=[router])
    uv, thread, url = serve(app)[:3]
    try:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            answers = []
            for path in ("/boom", "/healthz"):
                conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                received = b""
                while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    received += chunk
                answers.append(received)
    finally:
        stop(app, uv, thread)
    assert answers[0].startswith(b"HTTP/1.1 500") and b'"internal_error"' in answers[0]
    assert answers[1].startswith(b"HTTP/1.1 200"), answers[1][:100]  # the same connection
    messages = [r.getMessage() for r in caplog.records]
    assert any("unexpected-error type=RuntimeError" in m for m in messages)
    assert not any("Exception in ASGI application" in m for m in messages)


def test_a_whitespace_summary_body_is_400_and_no_body_is_the_default(live, conn):
    with live.client() as http:
        blank = http.post("/v1/documents/42/summaries", content=b"  \n ",
                          headers=auth(11) | {"Content-Type": "application/json"})
        undeclared = http.post("/v1/documents/42/summaries", content=b" ", headers=auth(11))
        assert rows(conn) == 0
        empty = http.post("/v1/documents/42/summaries", headers=auth(11))
    assert (blank.status_code, blank.json()["code"]) == (400, "malformed_json")
    assert blank.headers["content-type"] == "application/problem+json"
    assert (undeclared.status_code, undeclared.json()["code"]) == (415, "unsupported_media_type")
    assert empty.status_code == 202 and rows(conn) == 1


def escaped(text: str) -> str:
    """`text` as a JSON string with every character written as a \\uXXXX escape."""
    return '"' + "".join(f"\\u{ord(c):04x}" for c in text) + '"'


@pytest.mark.parametrize("char", ["a", "字"])
def test_a_payload_within_its_limit_is_taken_however_it_is_escaped(live, conn, char):
    from cachequeue.queue.limits import MAX_PAYLOAD_BYTES
    from cachequeue.service.requests import MAX_BODY_BYTES
    # The payload {"t":"..."} is 8 bytes of JSON around the text, in compact UTF-8.
    fits = char * ((MAX_PAYLOAD_BYTES - 8) // len(char.encode()))
    body = ('{"kind":' + escaped("noop") + ',"payload":{"t":' + escaped(fits) + '}}').encode()
    over = ('{"kind":"noop","payload":{"t":' + escaped(fits + "a" * 9) + '}}').encode()
    assert len(over) <= MAX_BODY_BYTES
    with live.client() as http:
        taken = http.post("/v1/jobs", content=body,
                          headers=auth(11) | {"Content-Type": "application/json"})
        refused = http.post("/v1/jobs", content=over,
                            headers=auth(11) | {"Content-Type": "application/json"})
    assert taken.status_code == 202, taken.text
    stored = conn.execute("SELECT payload->>'t' FROM jobs").fetchone()[0]
    assert stored == fits
    # Over the payload's limit: the payload's own 413, measured after parsing.
    assert (refused.status_code, refused.json()["code"]) == (413, "payload_too_large")
    assert rows(conn) == 1
