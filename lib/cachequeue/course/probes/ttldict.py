"""The cache the chapter warns about: a dict with TTLs checked only on read, nothing else."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

__all__ = ["TtlDict"]


class TtlDict:
    """Check, load, store. No coalescing, no capacity, no cap on loads, no purge.

    An expired entry is deleted only when its own key is read again, so entries that are
    never read again stay forever (C15). Concurrent misses of one key each call the
    loader (no coalescing, C5). Kept as a baseline for notebooks and plots; do not use it.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._data: dict[Hashable, tuple[Any, float]] = {}
        self.loads = 0

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable, default: Any = None) -> Any:
        entry = self._data.get(key)
        if entry is None:
            return default
        if entry[1] > self._clock():
            return entry[0]
        del self._data[key]  # the only place an expired entry ever leaves
        return default

    def set(self, key: Hashable, value: Any, ttl: float) -> None:
        self._data[key] = (value, self._clock() + ttl)

    async def get_or_load(
        self, key: Hashable, loader: Callable[[], Awaitable[Any]], *, ttl: float
    ) -> Any:
        missing = object()
        value = self.get(key, missing)
        if value is not missing:
            return value
        self.loads += 1
        value = await loader()
        self.set(key, value, ttl)
        return value
