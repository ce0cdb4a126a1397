"""What a request must look like before anything is written: body, JSON, fields, headers, ids.

`read_body` refuses a body larger than its limit (413) without reading it all, and is only
called after the caller was authenticated (a route's `Caller` dependency runs first, and
no route declares a body FastAPI would read on its own); `require_json` refuses another
content type (415) before the body is read. `parse_json` turns bytes into JSON with every
bound a hostile body could break: not JSON or not UTF-8, an integer of more than 4,300
digits, nesting deeper than MAX_JSON_DEPTH (400). `parse_job_request` turns the body of
`POST /v1/jobs` into a `JobRequest` or raises a `Problem` that says exactly what is wrong
(422 for JSON of the wrong shape, 413 for a payload over the queue's limit). The kind is
checked against the database by `jobs.submit` itself, which also writes nothing when it
refuses. `job_id` and `last_event_id` accept decimal digits only: "+1", "01", "1.0" and
"²" are not ids.

A refusal quotes what it was sent only as an `excerpt` (40 characters at most), so an
answer never grows with its request.

The checks are the library's own (`cachequeue.checks`, `queue.limits`), so an HTTP client
gets the same message a Python caller of `jobs.submit` would.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import Request

from ..checks import check_int, check_text
from ..errors import InvalidJob, PayloadTooLarge
from ..queue import jobs
from ..queue.limits import MAX_PAYLOAD_BYTES, check_run_after, payload_json
from .problems import Problem

__all__ = ["BODY_BUDGET", "ENVELOPE_BYTES", "ID_PATTERN", "MAX_ATTEMPTS", "MAX_BODY_BYTES", "MAX_JSON_DEPTH", "MAX_KEY_CHARS", "MAX_KIND_CHARS",
           "MAX_SMALL_BODY_BYTES", "JobRequest", "excerpt", "idempotency_key", "job_id",
           "last_event_id", "parse_job_request", "parse_json", "read_body", "require_json"]

# The payload's limit counts the bytes of its compact UTF-8 JSON, where an ASCII character
# is one byte; a client may write any character of a JSON string as a \uXXXX escape (six
# bytes; a CJK character is three bytes written as six, an emoji four written as twelve).
# So a body of six times the payload's limit, plus the fields around the payload (the kind,
# escaped too, and the other fields: ENVELOPE_BYTES), admits every payload the queue takes,
# however it is escaped; the payload itself is measured after parsing.
ENVELOPE_BYTES = 4096
MAX_BODY_BYTES = 6 * MAX_PAYLOAD_BYTES + ENVELOPE_BYTES
# Bytes of request bodies this process holds while reading them, all requests together: a
# read that would pass it is 503 `overloaded` (Retry-After), so a thousand connections
# sending large bodies at once cost at most this much memory, not a thousand bodies.
BODY_BUDGET = 64 * 1024 * 1024
MAX_SMALL_BODY_BYTES = 4096  # bodies of routes that take a few fields (a summary's template)
MAX_JSON_DEPTH = 32  # objects and arrays inside each other; deeper is refused before storing
MAX_KIND_CHARS = 100
# Keys from the Idempotency-Key header are stored with a prefix (operations.HTTP_KEY_PREFIX,
# "http:"), and the stored key is bounded by the queue: so the header gets what is left.
HTTP_KEY_PREFIX = "http:"
MAX_KEY_CHARS = jobs.MAX_KEY_CHARS - len(HTTP_KEY_PREFIX)
MAX_ATTEMPTS = 100
MAX_ID = 2**63 - 1  # job ids are PostgreSQL bigints
_FIELDS = {"kind", "payload", "max_attempts", "run_after"}
ID_PATTERN = r"^[1-9][0-9]{0,18}$"  # an id in a path: decimal digits, no sign, no leading 0
_DIGITS = re.compile(r"[0-9]{1,19}")
_ID = re.compile(ID_PATTERN[1:-1])
_JSON_TYPES = re.compile(r"application/(?:[\w.+-]+\+)?json", re.ASCII)


@dataclass(frozen=True)
class JobRequest:
    """A checked `POST /v1/jobs` body. `run_after`: seconds from now or an aware datetime."""

    kind: str
    payload: dict[str, Any]
    max_attempts: int = 3
    run_after: float | datetime | None = None


def excerpt(value: object, limit: int = 40) -> str:
    """`repr(value)`, cut to `limit` characters: how a refusal quotes what it was sent."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _too_large(size: int, limit: int) -> Problem:
    return Problem(413, "content_too_large",
                   f"the request body is {size} bytes or more; the limit is {limit}")


def require_json(request: Request) -> None:
    """A 415 unless the body is declared JSON (application/json or application/*+json)."""
    declared = request.headers.get("content-type", "")
    media = declared.split(";", 1)[0].strip().lower()
    if not _JSON_TYPES.fullmatch(media):
        raise Problem(415, "unsupported_media_type",
                      f"send the body as Content-Type: application/json, got {excerpt(declared)}")


class _Held:
    """The bytes of bodies being read in this process (see BODY_BUDGET)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._lock = threading.Lock()  # test servers run event loops in several threads

    def take(self, size: int) -> bool:
        with self._lock:
            if self.bytes + size > BODY_BUDGET:
                return False
            self.bytes += size
            return True

    def give(self, size: int) -> None:
        with self._lock:
            self.bytes -= size


HELD = _Held()


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body, or a 413 as soon as it passes `limit` bytes (before it is all read),
    or a 503 `overloaded` when the bodies this process is reading would pass BODY_BUDGET.
    The bytes count against the budget only while they are read: the caller parses them
    before it next awaits, so no two bodies it returned are held at once."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise _too_large(int(declared), limit)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            if size + len(chunk) > limit:
                raise _too_large(size + len(chunk), limit)
            if not HELD.take(len(chunk)):
                raise Problem(503, "overloaded", "the service is reading as many request "
                              "bodies as it may hold; try again shortly", {"Retry-After": "1"})
            size += len(chunk)
            chunks.append(chunk)
    finally:
        HELD.give(size)
    return b"".join(chunks)


def _depth(value: Any) -> int:
    """How deeply objects and arrays nest in `value` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in item)
    return deepest


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _DuplicateKey(f"the body has the key {excerpt(twice)} twice in one object")
    return found


def parse_json(raw: bytes) -> Any:
    """The JSON value of a body; a 400 Problem for anything a JSON parser should not be
    asked to hold (not UTF-8, a byte order mark, not JSON, a key twice in one object, a
    huge integer, nesting past MAX_JSON_DEPTH). RFC 8259 §8.1: JSON between systems is
    UTF-8 without a BOM; json.loads on bytes would guess UTF-16 or skip a BOM, so the
    body is decoded here, strictly. A key twice (RFC 8259 §4: names SHOULD be unique)
    would let two parsers read two different requests from one body."""
    try:
        value = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise Problem(400, "malformed_json", str(exc)) from None
    except UnicodeDecodeError:
        raise Problem(400, "malformed_json", "the body is not valid JSON: it is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise Problem(400, "malformed_json", f"the body is not valid JSON: {exc}") from None
    except ValueError:  # an integer of more than 4,300 digits (Python's conversion limit)
        raise Problem(400, "malformed_json",
                      "the body is not valid JSON here: a number has too many digits") from None
    except RecursionError:
        raise Problem(400, "malformed_json",
                      f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise Problem(400, "malformed_json", f"the body nests deeper than {MAX_JSON_DEPTH} levels")
    return value


def _invalid(message: str) -> Problem:
    return Problem(422, "invalid_job", message)


def _kind(value: Any) -> str:
    kind = check_text(value, "kind", limit=MAX_KIND_CHARS)
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in kind):
        raise ValueError(f"kind must be printable text, got {excerpt(kind)}")
    return kind


def _run_after(value: Any) -> float | datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise _invalid("run_after must be seconds or an ISO 8601 time, got "
                           f"{excerpt(value)}") from None
        if value.tzinfo is None:
            raise _invalid("run_after must carry a time zone (e.g. Z or +08:00), got "
                           f"{excerpt(value.isoformat())}")
    at, seconds = check_run_after(value)  # the queue's own bound, also for datetimes
    return seconds if at is None else at


def parse_job_request(raw: bytes) -> JobRequest:
    """The body of `POST /v1/jobs` as a JobRequest; a 400, 413 or 422 Problem otherwise."""
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise _invalid(f"the body must be a JSON object, got {type(body).__name__}")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise _invalid(f"unknown fields {excerpt(unknown)}; a job has {sorted(_FIELDS)}")
    try:
        kind = _kind(body.get("kind"))
        payload = body.get("payload", {})
        payload_json(payload)  # the queue's own rule: an object, its size, the round trip
        max_attempts = check_int(body.get("max_attempts", 3), "max_attempts", minimum=1,
                                 maximum=MAX_ATTEMPTS)
        run_after = _run_after(body.get("run_after"))
    except PayloadTooLarge as exc:
        raise Problem(413, "payload_too_large", str(exc)) from None
    except UnicodeError:  # a lone surrogate ("\ud800") cannot be UTF-8: say so in words
        raise _invalid("the payload is not valid Unicode text: it has a lone surrogate "
                       "(U+D800 to U+DFFF)") from None
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


def job_id(text: str, what: str = "job", maximum: int = MAX_ID) -> int:
    """An id from a path (routes declare ID_PATTERN, so a malformed one is a 422 before
    this): 1 to `maximum` in plain decimal digits, or a 404 (no such `what`)."""
    if not _ID.fullmatch(text):
        raise Problem(404, "not_found", f"no {what} {excerpt(text)}")
    if int(text) > maximum:
        raise Problem(404, "not_found", f"no {what} {text}")
    return int(text)


def _as_sent(header: str) -> str:
    """A header value as the client wrote it: the server decodes header bytes as Latin-1,
    so UTF-8 text ("²") arrives as mojibake ("Â²"); quoted back, it should read as sent."""
    try:
        return header.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return header


def last_event_id(header: str | None) -> int:
    """The Last-Event-ID header: the number of the last event the client has (0 when absent)."""
    if header is None or header.strip() == "":
        return 0
    text = header.strip()
    if not _DIGITS.fullmatch(text) or int(text) > MAX_ID:
        raise Problem(400, "bad_last_event_id",
                      f"Last-Event-ID must be an event number from this stream, got "
                      f"{excerpt(_as_sent(text))}")
    return int(text)
