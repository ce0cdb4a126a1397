"""Argument checks shared by the PostgreSQL queue (jobs) and its in-memory model (lab).

Both must accept and refuse exactly the same inputs with the same messages, so the checks
live here once. Each returns the value to use or raises a clear TypeError/ValueError
(InvalidJob/PayloadTooLarge for payloads).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime

from .errors import InvalidJob, PayloadTooLarge

__all__ = [
    "MAX_ERROR_CHARS",
    "MAX_LEASE",
    "MAX_PAYLOAD_BYTES",
    "check_int",
    "check_kinds",
    "check_lease",
    "check_text",
    "check_when",
    "error_text",
    "to_json",
]

MAX_PAYLOAD_BYTES = 64 * 1024  # UTF-8 bytes of the compact JSON text; results have the same limit
MAX_LEASE = 24 * 3600.0  # seconds; a longer task should renew its lease with heartbeat()
MAX_ERROR_CHARS = 2000  # last_error and attempt errors keep at most this many characters


def check_int(value: object, name: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def check_text(value: object, name: str, *, optional: bool = False, limit: int = 200) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if len(value) > limit:
        raise ValueError(f"{name} must be at most {limit} characters, got {len(value)}")
    return value


def check_lease(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"lease must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and 0 < value <= MAX_LEASE):
        raise ValueError(f"lease must be > 0 and <= {MAX_LEASE:g} seconds, got {value!r}")
    return float(value)


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
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be finite seconds {bound}, got {value!r}")
    return None, float(value)


def to_json(value: object, name: str) -> str:
    """Compact JSON text of `value`; it must survive a round trip unchanged and fit the limit."""
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
    if isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    elif isinstance(error, str) and error.strip():
        text = error
    else:
        raise TypeError(f"error must be an exception or a non-empty string, got {error!r}")
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
