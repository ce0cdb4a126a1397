"""What a request must look like before anything is written: body, JSON, fields, headers.

`read_body` refuses a body larger than MAX_BODY_BYTES (413) without reading it all;
`parse_job_request` turns the body of `POST /v1/jobs` into a `JobRequest` or raises a
`Problem` that says exactly what is wrong (400 for text that is not JSON, 422 for JSON of the
wrong shape, 413 for a payload over the queue's limit). The kind is checked against the
database by `jobs.submit` itself, which also writes nothing when it refuses.

The checks are the library's own (`cachequeue.checks`, `queue.limits`), so an HTTP client
gets the same message a Python caller of `jobs.submit` would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import Request

from ..checks import check_int, check_seconds, check_text
from ..errors import InvalidJob, PayloadTooLarge
from ..queue.limits import MAX_PAYLOAD_BYTES, to_json
from .problems import Problem

__all__ = ["MAX_ATTEMPTS", "MAX_BODY_BYTES", "MAX_KEY_CHARS", "JobRequest", "idempotency_key",
           "last_event_id", "parse_job_request", "read_body"]

MAX_BODY_BYTES = 2 * MAX_PAYLOAD_BYTES  # room for whitespace; the payload itself is checked too
MAX_KEY_CHARS = 200
MAX_ATTEMPTS = 100
_FIELDS = {"kind", "payload", "max_attempts", "run_after"}


@dataclass(frozen=True)
class JobRequest:
    """A checked `POST /v1/jobs` body. `run_after`: seconds from now or an aware datetime."""

    kind: str
    payload: dict[str, Any]
    max_attempts: int = 3
    run_after: float | datetime | None = None


def _too_large(size: int) -> Problem:
    return Problem(413, "content_too_large",
                   f"the request body is {size} bytes or more; the limit is {MAX_BODY_BYTES}")


async def read_body(request: Request) -> bytes:
    """The whole body, or a 413 as soon as it passes MAX_BODY_BYTES."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large(int(declared))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _too_large(size)
        chunks.append(chunk)
    return b"".join(chunks)


def _invalid(message: str) -> Problem:
    return Problem(422, "invalid_job", message)


def _run_after(value: Any) -> float | datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise _invalid(f"run_after must be seconds or an ISO 8601 time, got {value!r}") from None
        if when.tzinfo is None:
            raise _invalid(f"run_after must carry a time zone (e.g. Z or +08:00), got {value!r}")
        return when
    return check_seconds(value, "run_after", allow_zero=True, upper=365 * 24 * 3600.0)


def parse_job_request(raw: bytes) -> JobRequest:
    """The body of `POST /v1/jobs` as a JobRequest; a 400, 413 or 422 Problem otherwise."""
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Problem(400, "malformed_json", f"the body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _invalid(f"the body must be a JSON object, got {type(body).__name__}")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise _invalid(f"unknown fields {unknown}; a job has {sorted(_FIELDS)}")
    try:
        kind = check_text(body.get("kind"), "kind", limit=100)
        payload = body.get("payload", {})
        if not isinstance(payload, dict):
            raise InvalidJob(f"payload must be a JSON object, got {type(payload).__name__}")
        to_json(payload, "payload")  # the queue's own size and round-trip rule
        max_attempts = check_int(body.get("max_attempts", 3), "max_attempts", minimum=1,
                                 maximum=MAX_ATTEMPTS)
        run_after = _run_after(body.get("run_after"))
    except PayloadTooLarge as exc:
        raise Problem(413, "payload_too_large", str(exc)) from None
    except (InvalidJob, TypeError, ValueError) as exc:
        raise _invalid(str(exc)) from None
    return JobRequest(kind, payload, max_attempts, run_after)


def idempotency_key(header: str | None) -> str | None:
    """The Idempotency-Key header, checked; None when absent."""
    if header is None:
        return None
    try:
        return check_text(header, "Idempotency-Key", limit=MAX_KEY_CHARS)
    except ValueError as exc:
        raise Problem(400, "bad_idempotency_key", str(exc)) from None


def last_event_id(header: str | None) -> int:
    """The Last-Event-ID header: the number of the last event the client has (0 when absent)."""
    if header is None or header.strip() == "":
        return 0
    text = header.strip()
    if not text.isdigit() or len(text) > 18:
        raise Problem(400, "bad_last_event_id",
                      f"Last-Event-ID must be an event number from this stream, got {text[:40]!r}")
    return int(text)
