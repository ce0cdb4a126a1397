"""What a request must look like: the body of POST /v1/jobs, Idempotency-Key, Last-Event-ID.
Each refusal is a Problem with the status and the code a client can act on."""

import json
from datetime import UTC, datetime

import pytest

from cachequeue.queue.limits import MAX_PAYLOAD_BYTES
from cachequeue.service.problems import Problem
from cachequeue.service.requests import (
    JobRequest,
    idempotency_key,
    last_event_id,
    parse_job_request,
)
from cachequeue.service.responses import retry_after_for


def body(**fields) -> bytes:
    return json.dumps(fields).encode()


def test_a_good_body_becomes_a_job_request():
    assert parse_job_request(body(kind="noop")) == JobRequest("noop", {}, 3, None)
    request = parse_job_request(body(kind="summarise", payload={"document_id": 42},
                                     max_attempts=5, run_after=2.5))
    assert request == JobRequest("summarise", {"document_id": 42}, 5, 2.5)
    when = parse_job_request(body(kind="noop", run_after="2026-01-01T08:00:00+08:00")).run_after
    assert when == datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("raw, status, code, message", [
    (b"", 400, "malformed_json", "not valid JSON"),
    (b"{'kind': 'noop'}", 400, "malformed_json", "not valid JSON"),
    (b"\xff\xfe", 400, "malformed_json", "not valid JSON"),
    (b"null", 422, "invalid_job", "must be a JSON object, got NoneType"),
    (body(), 422, "invalid_job", "kind must be a str, got NoneType None"),
    (body(kind=""), 422, "invalid_job", "kind must be a non-empty string"),
    (body(kind=7), 422, "invalid_job", "kind must be a str"),
    (body(kind="noop", payload="x"), 422, "invalid_job", "payload must be a JSON object"),
    (body(kind="noop", max_attempts=101), 422, "invalid_job", "max_attempts must be <= 100"),
    (body(kind="noop", max_attempts=2.0), 422, "invalid_job", "max_attempts must be an int"),
    (body(kind="noop", run_after=-1), 422, "invalid_job", "run_after must be >= 0"),
    (body(kind="noop", run_after="soon"), 422, "invalid_job", "seconds or an ISO 8601 time"),
    (body(kind="noop", run_after="2026-01-01T00:00:00"), 422, "invalid_job", "time zone"),
    (body(kind="noop", queue="fast"), 422, "invalid_job", "unknown fields ['queue']"),
    (body(kind="noop", payload={"t": "x" * MAX_PAYLOAD_BYTES}), 413, "payload_too_large",
     f"the limit is {MAX_PAYLOAD_BYTES}"),
])
def test_a_bad_body_is_refused_with_a_clear_message(raw, status, code, message):
    with pytest.raises(Problem) as caught:
        parse_job_request(raw)
    assert (caught.value.status, caught.value.code) == (status, code)
    assert message in caught.value.detail


def test_an_idempotency_key_is_checked():
    assert idempotency_key(None) is None and idempotency_key("upload-7") == "upload-7"
    for bad in ("", "   ", "k" * 201):
        with pytest.raises(Problem) as caught:
            idempotency_key(bad)
        assert (caught.value.status, caught.value.code) == (400, "bad_idempotency_key")


def test_last_event_id_is_a_number_from_the_stream():
    assert [last_event_id(h) for h in (None, "", " 0 ", "17")] == [0, 0, 0, 17]
    for bad in ("-1", "1.5", "abc", "9" * 19):
        with pytest.raises(Problem):
            last_event_id(bad)


def test_retry_after_waits_at_least_until_a_later_start():
    assert [retry_after_for(1, r) for r in (None, 0.5, 1, 1.2, 30)] == [1, 1, 1, 2, 30]
    assert retry_after_for(2, datetime(2030, 1, 1, tzinfo=UTC)) == 2


def test_ids_are_plain_decimal_digits():
    from cachequeue.service.requests import job_id

    assert [job_id(t) for t in ("1", "42", str(2**63 - 1))] == [1, 42, 2**63 - 1]
    for bad in ("0", "+1", "01", "1.0", "²", "١", str(2**63)):
        with pytest.raises(Problem) as caught:
            job_id(bad)
        assert caught.value.status == 404


def test_json_that_a_parser_should_not_hold_is_a_400():
    from cachequeue.service.requests import MAX_JSON_DEPTH, parse_json

    assert parse_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None
    for raw in (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
                b"[" * 5000 + b"]" * 5000, b"9" * 5000):
        with pytest.raises(Problem) as caught:
            parse_json(raw)
        assert (caught.value.status, caught.value.code) == (400, "malformed_json")


@pytest.mark.parametrize("fields, message", [
    ({"kind": "no\x00op"}, "printable"),
    ({"kind": "noop\ud800"}, "printable"),
    ({"kind": "noop", "run_after": 366 * 86400}, "run_after must be >= 0 and <= 3.1536e+07"),
    ({"kind": "noop", "unknown" * 1000: 1}, "unknown fields"),
])
def test_more_bad_bodies(fields, message):
    with pytest.raises(Problem) as caught:
        parse_job_request(json.dumps(fields).encode())
    assert message in caught.value.detail and len(caught.value.detail) < 300


def test_last_event_id_is_ascii_digits_only():
    for bad in ("²", "１", "٣", "1" * 19 + "0"):
        with pytest.raises(Problem):
            last_event_id(bad)


class _Streaming:
    """A request whose body arrives in `chunks`, pausing after the first until `go` is set."""

    def __init__(self, chunks, go=None):
        self.headers = {}
        self.chunks, self.go = chunks, go

    async def stream(self):
        for n, chunk in enumerate(self.chunks):
            if n == 1 and self.go is not None:
                await self.go.wait()
            yield chunk


def test_bodies_being_read_at_once_stay_within_the_budget(monkeypatch):
    import asyncio

    from cachequeue.service import requests as service_requests
    from cachequeue.service.requests import HELD, read_body

    monkeypatch.setattr(service_requests, "BODY_BUDGET", 1000)

    async def run():
        go = asyncio.Event()
        slow = asyncio.create_task(read_body(_Streaming([b"a" * 600, b"b" * 100], go)))
        await asyncio.sleep(0)  # the slow body holds its first 600 bytes
        assert HELD.bytes == 600
        with pytest.raises(Problem) as refused:
            await read_body(_Streaming([b"c" * 300, b"d" * 200]))
        assert (refused.value.status, refused.value.code) == (503, "overloaded")
        assert refused.value.headers == {"Retry-After": "1"}
        assert HELD.bytes == 600  # the refused read gave back what it had taken
        go.set()
        assert await slow == b"a" * 600 + b"b" * 100
        assert HELD.bytes == 0
        assert await read_body(_Streaming([b"c" * 300, b"d" * 200])) == b"c" * 300 + b"d" * 200

    asyncio.run(run())
