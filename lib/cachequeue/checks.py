"""Argument checks with one rule for the whole library.

A value of the wrong type raises TypeError; a value of the right type that is out of range
raises ValueError. Every check takes `(value, name)`, names the argument in its message,
shows what it got, and returns the value to use (seconds as a float). Nothing else in the
library writes its own `isinstance` checks for these kinds of argument.

>>> check_seconds(1.5, "ttl")
1.5
>>> check_seconds(0, "ttl")
Traceback (most recent call last):
...
ValueError: ttl must be > 0 seconds, got 0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any, TypeVar

__all__ = [
    "check_bool",
    "check_autocommit_idle",
    "check_callable",
    "check_choice",
    "check_finite",
    "check_instance",
    "check_int",
    "check_seconds",
    "check_text",
]

T = TypeVar("T")


def _got(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


def _qualified(cls: type) -> str:
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _real(value: object, name: str, what: str) -> float:
    """`value` as a float if it is a real number (bool is not), else TypeError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {what}, got {_got(value)}")
    try:
        return float(value)
    except OverflowError:  # a huge int or Fraction
        return math.inf


def check_int(value: object, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """An int (not a bool) with minimum <= value <= maximum where those are given."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {_got(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return value


def check_finite(value: object, name: str, *, minimum: float | None = None,
                 above: float | None = None) -> float:
    """A finite real number (int, float, Fraction; not bool), as a float; >= `minimum` and
    > `above` where those are given (`above=0`: a positive number)."""
    number = _real(value, name, "a number")
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be >= {minimum:g}, got {value!r}")
    if above is not None and number <= above:
        raise ValueError(f"{name} must be > {above:g}, got {value!r}")
    return number


def check_seconds(value: object, name: str, *, allow_zero: bool = False,
                  upper: float = math.inf, upper_name: str | None = None) -> float:
    """A duration: a finite real number of seconds, > 0 (>= 0 with `allow_zero`) and
    <= `upper`. `upper_name` names the bound in the message (e.g. "max_ttl")."""
    seconds = _real(value, name, "a number of seconds")
    if not math.isfinite(seconds):
        raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
    if seconds < 0 or (seconds == 0 and not allow_zero) or seconds > upper:
        bound = ">= 0" if allow_zero else "> 0"
        if upper != math.inf:
            bound += f" and <= {upper_name} ({upper:g})" if upper_name else f" and <= {upper:g}"
        raise ValueError(f"{name} must be {bound} seconds, got {value!r}")
    return seconds


def check_text(value: object, name: str, *, optional: bool = False,
               limit: int = 200) -> str | None:
    """A str with something other than whitespace in it, at most `limit` characters;
    None passes when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_got(value)}")
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if len(value) > limit:
        raise ValueError(f"{name} must be at most {limit} characters, got {len(value)}")
    return value


def check_bool(value: object, name: str) -> bool:
    """True or False (not 0, 1 or None)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {_got(value)}")
    return value


def check_choice(value: T, name: str, choices: Collection[T]) -> T:
    """One of `choices` (compared with ==); anything else is a ValueError that lists them."""
    try:
        ok = value in choices
    except TypeError:  # an unhashable value and a set of choices
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_callable(value: Any, name: str, what: str = "a callable") -> Any:
    """Something callable; `what` says which kind of callable, e.g. "a zero-argument callable"."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}, got {_got(value)}")
    return value


def check_autocommit_idle(conn: Any, what: str) -> Any:
    """A database connection in autocommit mode with no transaction open: what a function
    needs whose statements must each commit on their own (a claim before its handler runs,
    VACUUM, a commit timing). `what` names the function in the message."""
    from psycopg.pq import TransactionStatus  # here: most users of checks need no driver

    status = getattr(getattr(conn, "info", None), "transaction_status", None)
    if status is None:
        raise TypeError(f"{what} needs a psycopg connection, got {type(conn).__name__}")
    if not conn.autocommit or status != TransactionStatus.IDLE:
        raise ValueError(f"{what} needs an autocommit connection outside any transaction "
                         "(db.connect(schema)); do not call it inside conn.transaction()")
    return conn


def check_instance(value: Any, name: str, cls: type | tuple[type, ...]) -> Any:
    """An instance of `cls` (a class or a tuple of classes)."""
    if not isinstance(value, cls):
        names = " or ".join(_qualified(c) for c in (cls if isinstance(cls, tuple) else (cls,)))
        raise TypeError(f"{name} must be a {names}, got {_qualified(type(value))}")
    return value
