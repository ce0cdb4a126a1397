"""When to try a failed job again: exponential backoff with full jitter, and the error classes."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["PermanentError", "RetryPolicy", "RetryableError"]


class PermanentError(Exception):
    """Retrying cannot help (bad input, unsupported format): the job fails at once."""


class RetryableError(Exception):
    """A transient failure (timeout, busy vendor). Any other exception counts as retryable too."""


def _seconds(value: object, name: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number of seconds {bound}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before attempt n + 1, after attempt n failed.

    Formula (full jitter, as in the AWS architecture blog's "Exponential Backoff And Jitter"):

        ceiling(n) = min(cap, base * 2 ** (n - 1))
        delay(n)   = uniform(0, ceiling(n))     if jitter
                   = ceiling(n)                 otherwise

    Worked schedule for RetryPolicy(max_attempts=8, base=1.0, cap=60.0):

        failed attempt n  | 1   | 2   | 3   | 4   | 5    | 6    | 7
        ceiling(n) in s   | 1.0 | 2.0 | 4.0 | 8.0 | 16.0 | 32.0 | 60.0

    After attempt 8 fails there is no delay: the attempts are used up and the job is failed.
    With jitter each delay is drawn anew from [0, ceiling], so two hundred jobs that failed
    together do not come back together. `deadline` (seconds since submit, or None) bounds
    the whole effort: no retry is scheduled to run after it. `max_attempts` caps the tries;
    `jobs.fail` stops at the smaller of this and the job's own `max_attempts`.
    """

    max_attempts: int = 3
    base: float = 1.0
    cap: float = 60.0
    deadline: float | None = None
    jitter: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise TypeError(f"max_attempts must be an int, got {self.max_attempts!r}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts!r}")
        _seconds(self.base, "base")
        _seconds(self.cap, "cap")
        if self.cap < self.base:
            raise ValueError(f"cap ({self.cap!r}) must be >= base ({self.base!r})")
        if self.deadline is not None:
            _seconds(self.deadline, "deadline")
        if not isinstance(self.jitter, bool):
            raise TypeError(f"jitter must be True or False, got {self.jitter!r}")

    def ceiling(self, attempt: int) -> float:
        """The largest delay after failed attempt `attempt` (1-based): min(cap, base * 2**(n-1))."""
        if isinstance(attempt, bool) or not isinstance(attempt, int):
            raise TypeError(f"attempt must be an int, got {attempt!r}")
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt!r}")
        # 2.0 ** 1000 is still a finite float; beyond that the cap has long taken over.
        return min(self.cap, self.base * 2.0 ** min(attempt - 1, 1000))

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt `attempt`: uniform(0, ceiling), or the ceiling.

        `rng` (a `random.Random`) makes the jitter reproducible; None uses the module's.
        """
        ceiling = self.ceiling(attempt)
        if not self.jitter:
            return ceiling
        return (rng if rng is not None else random).uniform(0.0, ceiling)

    def schedule(self) -> list[float]:
        """The ceilings for attempts 1 .. max_attempts - 1 (the docstring's worked schedule)."""
        return [self.ceiling(n) for n in range(1, self.max_attempts)]
