"""A clock that moves only when told to: the way tests and notebooks make time deterministic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .checks import check_finite

__all__ = ["EPOCH", "ManualClock"]

# Where a ManualClock's zero lies when its readings are mapped onto database timestamps.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class ManualClock:
    """Callable like `time.monotonic`: returns seconds as a float, starting at `start`.

    >>> clock = ManualClock()
    >>> clock.advance(1.5); clock()
    1.5
    >>> clock.datetime()
    datetime.datetime(2026, 1, 1, 0, 0, 1, 500000, tzinfo=datetime.timezone.utc)
    """

    def __init__(self, start: float = 0.0, *, epoch: datetime = EPOCH) -> None:
        self._now = check_finite(start, "start")
        self.epoch = epoch

    def __call__(self) -> float:
        return self._now

    @property
    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move forward by `seconds` (>= 0) and return the new reading. Time never runs back."""
        seconds = check_finite(seconds, "seconds")
        if seconds < 0:
            raise ValueError(f"a clock cannot go back: advance({seconds!r})")
        self._now += seconds
        return self._now

    def datetime(self) -> datetime:
        """The current reading as an aware datetime (epoch + seconds), for the database clock."""
        return self.epoch + timedelta(seconds=self._now)

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now!r})"
