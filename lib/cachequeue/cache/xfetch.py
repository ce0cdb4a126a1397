"""Probabilistic early refresh (XFetch, Vattani et al., VLDB 2015) on top of LoadingCache."""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Protocol

from ..checks import check_callable, check_finite
from .loading import LoadingCache

__all__ = ["EarlyRefreshCache"]


class _Random(Protocol):
    def random(self) -> float: ...


class EarlyRefreshCache(LoadingCache):
    """A LoadingCache whose hits sometimes refresh an entry shortly before it expires.

    XFetch: a hit at time `now` on an entry expiring at `expiry`, whose last load took
    `delta` seconds, starts a refresh when

        now + delta * beta * -ln(1 - U) >= expiry,      U uniform in [0, 1)

    so the chance grows as expiry nears, and grows sooner for slow loads. With many readers,
    one of them refreshes a hot key before it expires, instead of all of them missing at
    once when it does. beta > 1 refreshes earlier, beta < 1 later.

    Differences from the paper, on purpose: the refresh runs in the background as an ordinary
    flight of the cache (coalesced, counted in `stats.loads`, capped by `max_pending`; when
    the cap is reached the refresh is skipped), and the reader that triggered it returns the
    current, still fresh value at once. A failed refresh keeps the current value until it
    expires. `refreshes` counts the refreshes started. Everything else is LoadingCache.
    """

    __slots__ = ("_beta", "_delta", "_random", "refreshes")

    def __init__(self, *, beta: float = 1.0, rng: _Random | None = None, **settings: Any) -> None:
        super().__init__(**settings)
        self._beta = check_finite(beta, "beta", above=0)
        if rng is not None:
            check_callable(getattr(rng, "random", None), "rng.random",
                           "a method, as on random.Random")
        self._random = (rng or random.Random()).random
        self._delta: dict[Hashable, float] = {}  # key -> seconds its last successful load took
        self.refreshes = 0

    @property
    def beta(self) -> float:
        return self._beta

    async def get_or_load(
        self, key: Hashable, loader: Callable[[], Awaitable[Any]], *, ttl: float
    ) -> Any:
        ttl = self.check_ttl(ttl)
        check_callable(loader, "loader", "a zero-argument callable")
        entry = self._data.get(key)
        delta = self._delta.get(key)
        if (entry is not None and delta and key not in self._flights
                and self._running < self._max_pending):
            now = self._clock()
            if entry[1] > now and now + delta * self._beta * -math.log1p(-self._random()) >= entry[1]:
                self.refreshes += 1
                # Nobody waits for this load; hits keep returning the current value. A loader
                # that fails to start is counted in stats.failures and must not fail a hit.
                with contextlib.suppress(Exception):
                    self._start(key, loader, ttl)
        return await super().get_or_load(key, loader, ttl=ttl)

    async def _load(self, key, awaitable, ttl, flight):
        started = self._clock()
        value = await super()._load(key, awaitable, ttl, flight)
        if key in self._data:
            self._delta[key] = self._clock() - started
            if len(self._delta) > 2 * self._max_entries:  # forget evicted keys, in bulk
                self._delta = {k: d for k, d in self._delta.items() if k in self._data}
        return value
