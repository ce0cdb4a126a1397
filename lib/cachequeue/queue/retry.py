"""When to try a failed job again: exponential backoff with jitter (full by default, or equal), and the error classes."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..checks import check_choice, check_int, check_seconds

__all__ = ["JITTERS", "PermanentError", "RetryPolicy", "RetryableError"]

# The jitter modes by name; `jitter=True` is "full" and `jitter=False` is "none".
JITTERS = ("full", "equal", "none")


class PermanentError(Exception):
    """Retrying cannot help (bad input, unsupported format): the job fails at once."""


class RetryableError(Exception):
    """A transient failure (timeout, busy vendor). Any other exception counts as retryable too."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before attempt n + 1, after attempt n failed.

    Formula (the jitter modes of the AWS architecture blog's "Exponential Backoff And Jitter"):

        ceiling(n) = min(cap, base * 2 ** (n - 1))
        delay(n)   = uniform(0, ceiling(n))                        jitter="full" (or True)
                   = ceiling(n) / 2 + uniform(0, ceiling(n) / 2)   jitter="equal"
                   = ceiling(n)                                    jitter="none" (or False)

    Each mode guarantees a range, [floor(n), ceiling(n)]:

        "full"   floor 0: the widest spread, so the smallest crowd, but a retry may come back
                 at once after the failure;
        "equal"  floor ceiling(n) / 2: never sooner than half the ceiling; the same retries
                 spread over half the range, so a denser crowd than with full jitter and a
                 longer mean wait (3/4 of the ceiling instead of 1/2);
        "none"   floor = ceiling: exact and reproducible, and jobs that failed together
                 come back together.

    Worked schedule for RetryPolicy(max_attempts=8, base=1.0, cap=60.0):

        failed attempt n  | 1       | 2       | 3       | 4       | 5        | 6         | 7
        ceiling(n) in s   | 1.0     | 2.0     | 4.0     | 8.0     | 16.0     | 32.0      | 60.0
        "full" delay in s | 0-1.0   | 0-2.0   | 0-4.0   | 0-8.0   | 0-16.0   | 0-32.0    | 0-60.0
        "equal" delay in s| 0.5-1.0 | 1.0-2.0 | 2.0-4.0 | 4.0-8.0 | 8.0-16.0 | 16.0-32.0 | 30.0-60.0
        "none" delay in s | 1.0     | 2.0     | 4.0     | 8.0     | 16.0     | 32.0      | 60.0

    After attempt 8 fails there is no delay: the attempts are used up and the job is failed.
    With jitter each delay is drawn anew, so two hundred jobs that failed together do not
    come back together. `deadline` (seconds since submit, or None) bounds the whole effort:
    no retry is scheduled to run after it. `max_attempts` caps the tries; `jobs.fail` stops
    at the smaller of this and the job's own `max_attempts`. Neither sets a shortest wait:
    only the jitter mode's floor does.

    AWS's "decorrelated jitter" (min(cap, uniform(base, 3 * previous delay))) is not offered:
    it needs the previous delay of the same job, and `delay(attempt, rng)`, which
    `jobs.fail` and the in-memory model call, is given only the attempt number.
    """

    max_attempts: int = 3
    base: float = 1.0
    cap: float = 60.0
    deadline: float | None = None
    jitter: bool | str = True

    def __post_init__(self) -> None:
        check_int(self.max_attempts, "max_attempts", minimum=1)
        check_seconds(self.base, "base")
        check_seconds(self.cap, "cap")
        if self.cap < self.base:
            raise ValueError(f"cap ({self.cap!r}) must be >= base ({self.base!r})")
        if self.deadline is not None:
            check_seconds(self.deadline, "deadline")
        if not isinstance(self.jitter, bool | str):
            raise TypeError(f"jitter must be True, False or one of {JITTERS}, "
                            f"got {type(self.jitter).__name__}")
        if isinstance(self.jitter, str):
            check_choice(self.jitter, "jitter", JITTERS)

    @property
    def mode(self) -> str:
        """The jitter mode by name: "full", "equal" or "none" (True is "full", False "none")."""
        if isinstance(self.jitter, bool):
            return "full" if self.jitter else "none"
        return self.jitter

    def ceiling(self, attempt: int) -> float:
        """The largest delay after failed attempt `attempt` (1-based): min(cap, base * 2**(n-1))."""
        check_int(attempt, "attempt", minimum=1)
        # 2.0 ** 1000 is still a finite float; beyond that the cap has long taken over.
        return min(self.cap, self.base * 2.0 ** min(attempt - 1, 1000))

    def floor(self, attempt: int) -> float:
        """The smallest delay after failed attempt `attempt`: 0 ("full"), half the ceiling
        ("equal"), or the ceiling itself ("none")."""
        ceiling = self.ceiling(attempt)
        return {"full": 0.0, "equal": ceiling / 2, "none": ceiling}[self.mode]

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt `attempt`, drawn from [floor, ceiling].

        `rng` (a `random.Random`) makes the jitter reproducible; None uses the module's.
        Full jitter draws uniform(0, ceiling), equal jitter ceiling / 2 + uniform(0,
        ceiling / 2); either draws exactly one number from `rng` per call.
        """
        ceiling = self.ceiling(attempt)
        mode = self.mode
        if mode == "none":
            return ceiling
        uniform = (rng if rng is not None else random).uniform
        if mode == "equal":
            half = ceiling / 2
            return half + uniform(0.0, half)
        return uniform(0.0, ceiling)

    def schedule(self) -> list[float]:
        """The ceilings for attempts 1 .. max_attempts - 1 (the docstring's worked schedule)."""
        return [self.ceiling(n) for n in range(1, self.max_attempts)]
