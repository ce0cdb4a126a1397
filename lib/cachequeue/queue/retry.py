"""When to try a failed job again: exponential backoff with full jitter, and the error classes."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..checks import check_bool, check_int, check_seconds

__all__ = ["PermanentError", "RetryPolicy", "RetryableError"]


class PermanentError(Exception):
    """Retrying cannot help (bad input, unsupported format): the job fails at once."""


class RetryableError(Exception):
    """A transient failure (timeout, busy vendor). Any other exception counts as retryable too."""


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
        check_int(self.max_attempts, "max_attempts", minimum=1)
        check_seconds(self.base, "base")
        check_seconds(self.cap, "cap")
        if self.cap < self.base:
            raise ValueError(f"cap ({self.cap!r}) must be >= base ({self.base!r})")
        if self.deadline is not None:
            check_seconds(self.deadline, "deadline")
        check_bool(self.jitter, "jitter")

    def ceiling(self, attempt: int) -> float:
        """The largest delay after failed attempt `attempt` (1-based): min(cap, base * 2**(n-1))."""
        check_int(attempt, "attempt", minimum=1)
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
