"""The queue's limits and the checks of its own kinds of input: leases, times, payloads.

The PostgreSQL queue (`jobs`) and its in-memory model (`course.lab`) must accept and refuse
exactly the same inputs with the same messages, so both use these. Generic checks (ints,
text, seconds) come from `cachequeue.checks`: TypeError for a wrong type, ValueError for a
bad value; payloads that cannot be stored raise InvalidJob or PayloadTooLarge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from ..checks import check_seconds, check_text
from ..errors import InvalidJob, PayloadTooLarge

__all__ = [
    "MAX_ERROR_CHARS",
    "MAX_HANDBACKS",
    "MAX_LEASE",
    "MAX_PAYLOAD_BYTES",
    "MAX_RUN_AFTER",
    "check_kinds",
    "check_lease",
    "check_run_after",
    "check_when",
    "error_text",
    "payload_json",
    "to_json",
]

MAX_PAYLOAD_BYTES = 64 * 1024  # UTF-8 bytes of the compact JSON text; results have the same limit
MAX_LEASE = 24 * 3600.0  # seconds; a longer task should renew its lease with heartbeat()
MAX_ERROR_CHARS = 2000  # last_error and attempt errors keep at most this many characters
MAX_RUN_AFTER = 365 * 24 * 3600.0  # seconds; a job due later than that is a calendar entry
# A job handed back this many times (jobs.release: its worker stopped first) fails instead:
# ten shutdowns in a row that it did not outlast say more about the handler than about luck.
MAX_HANDBACKS = 10


def check_lease(value: object) -> float:
    """A lease: seconds > 0 and <= MAX_LEASE (a longer task renews its lease instead)."""
    return check_seconds(value, "lease", upper=MAX_LEASE)


def check_when(value: object, name: str, *, positive: bool) -> tuple[datetime | None, float | None]:
    """A datetime (aware) or seconds from now, split into the two query parameters."""
    if value is None:
        return None, None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{name} must be timezone-aware (e.g. tzinfo=UTC), got {value!r}")
        return value, None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a datetime or seconds from now, got {value!r}")
    return None, check_seconds(value, name, allow_zero=not positive)


def check_run_after(value: object) -> tuple[datetime | None, float | None]:
    """When a new job may first run: None (now), seconds from now (0 to MAX_RUN_AFTER), or an
    aware datetime, split into the submit statement's two parameters.

    A datetime is bounded by that statement against the database clock (cq_now(), which a
    manual clock may have set far from the wall clock): more than MAX_RUN_AFTER ahead is
    refused, and a time in the past means now, so no job can jump ahead of jobs already
    waiting (claims take the earliest run_after first).
    """
    if isinstance(value, datetime) or value is None:
        return check_when(value, "run_after", positive=False)
    return None, check_seconds(value, "run_after", allow_zero=True, upper=MAX_RUN_AFTER)


def to_json(value: object, name: str) -> str:
    """Compact JSON text of `value`; it must survive a round trip unchanged and fit the limit."""
    if value is None:  # most handlers return nothing: no encoder per job for that
        return "null"
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidJob(f"{name} must be JSON-serialisable: {exc}") from None
    # Containers may hold tuples or non-string keys, which JSON stores as something else.
    if isinstance(value, dict | list | tuple) and json.loads(text) != value:
        raise InvalidJob(f"{name} changes in a JSON round trip (tuples or non-string keys?)")
    size = len(text.encode("utf-8"))
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(
            f"{name} is {size} bytes of JSON, the limit is {MAX_PAYLOAD_BYTES}; "
            "store large data elsewhere and pass its id"
        )
    return text


def payload_json(payload: object) -> str:
    """A job's payload as its stored JSON text: a dict (a JSON object), within to_json's
    rules. Anything else is InvalidJob, so the queue, its model and the HTTP service refuse
    the same payloads with the same message."""
    if not isinstance(payload, dict):
        raise InvalidJob(f"payload must be a JSON object (a dict), got {type(payload).__name__}")
    return to_json(payload, "payload")


def check_kinds(kinds: Iterable[str] | None) -> list[str] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str) or not isinstance(kinds, Iterable):
        raise TypeError(f"kinds must be a list of kind names or None, got {kinds!r}")
    names = [check_text(k, "each kind") for k in kinds]
    if not names:
        raise ValueError("kinds must not be empty (None means every kind)")
    return names


def error_text(error: BaseException | str) -> str:
    """The text kept for a failure: "Type: message" of an exception, or the string itself,
    cut to MAX_ERROR_CHARS."""
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    else:
        text = check_text(error, "error", limit=10**9)
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
