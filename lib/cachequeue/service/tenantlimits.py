"""Per-tenant limits of one service process: a submit rate and a cap on open event streams.

Chapter 08 teaches both for workers (fair claims, rate limits); this is the same idea at the
service's door, so one tenant cannot take the service from the others:

- **Submit rate**: a token bucket per tenant (`submit_rate` per second, up to
  `submit_burst` at once). A submit without a token is answered 429 `rate_limited` with
  Retry-After (the whole seconds until the next token), before anything is read from the
  database. The buckets live in this process: N processes of one service allow N times
  the rate. The cap on pending jobs (`operations.submit_job`, `max_pending`) is the limit
  that holds across processes, in the database.
- **Open event streams**: at most `max_streams` per tenant in this process; the next
  opening is 429 `too_many_streams` (before its 200), so one tenant's 500 idle streams do
  not hold the process's connections and memory. Openings that run at the same time may
  overshoot by the number of them in flight (the count is taken when a stream starts).

0 turns a limit off. The clock is injectable (`clock`, seconds), so a test steps it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from ..checks import check_callable, check_finite, check_int
from .problems import Problem

__all__ = ["MAX_BUCKETS", "TenantLimits"]

MAX_BUCKETS = 10_000  # buckets kept at most; full ones are dropped first (they cost nothing)


class TenantLimits:
    """The buckets and stream counts (see the module docstring)."""

    def __init__(self, *, submit_rate: float = 100.0, submit_burst: float = 200.0,
                 max_streams: int = 100, clock: Callable[[], float] = time.monotonic) -> None:
        self.submit_rate = check_finite(submit_rate, "submit_rate", minimum=0)
        self.submit_burst = check_finite(submit_burst, "submit_burst", minimum=1)
        self.max_streams = check_int(max_streams, "max_streams", minimum=0, maximum=100_000)
        self._clock = check_callable(clock, "clock", "a callable returning seconds")
        self._buckets: dict[int, tuple[float, float]] = {}  # tenant -> (tokens, at)
        self._streams: dict[int, int] = {}
        self.refused = {"rate_limited": 0, "too_many_streams": 0}

    def admit_submit(self, tenant_id: int) -> None:
        """Take one submit token of the tenant's bucket; 429 `rate_limited` when none is left."""
        if not self.submit_rate:
            return
        now = self._clock()
        tokens, at = self._buckets.get(tenant_id, (self.submit_burst, now))
        tokens = min(self.submit_burst, tokens + max(0.0, now - at) * self.submit_rate)
        if tokens < 1.0:
            self._buckets[tenant_id] = (tokens, now)
            self.refused["rate_limited"] += 1
            wait = max(1, math.ceil((1.0 - tokens) / self.submit_rate))
            raise Problem(429, "rate_limited",
                          f"this tenant may submit {self.submit_rate:g} jobs per second "
                          f"(bursts of {self.submit_burst:g}); try again in {wait} s",
                          {"Retry-After": str(wait)})
        if len(self._buckets) >= MAX_BUCKETS and tenant_id not in self._buckets:
            self._forget_full(now)
        self._buckets[tenant_id] = (tokens - 1.0, now)

    def _forget_full(self, now: float) -> None:
        for tenant, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * self.submit_rate >= self.submit_burst:
                del self._buckets[tenant]
        if len(self._buckets) >= MAX_BUCKETS:  # none full: forget the oldest refill
            del self._buckets[min(self._buckets, key=lambda t: self._buckets[t][1])]

    def check_stream(self, tenant_id: int, retry_after: int) -> None:
        """429 `too_many_streams` when the tenant has max_streams open in this process."""
        if self.max_streams and self._streams.get(tenant_id, 0) >= self.max_streams:
            self.refused["too_many_streams"] += 1
            raise Problem(429, "too_many_streams",
                          f"this tenant has {self.max_streams} event streams open, the most "
                          "allowed; close one first", {"Retry-After": str(retry_after)})

    def stream_started(self, tenant_id: int) -> None:
        self._streams[tenant_id] = self._streams.get(tenant_id, 0) + 1

    def stream_ended(self, tenant_id: int) -> None:
        left = self._streams.get(tenant_id, 0) - 1
        if left > 0:
            self._streams[tenant_id] = left
        else:
            self._streams.pop(tenant_id, None)

    def streams(self, tenant_id: int) -> int:
        return self._streams.get(tenant_id, 0)
