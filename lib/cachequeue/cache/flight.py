"""One load in flight, shared by every caller that waits for it (singleflight for asyncio)."""

from __future__ import annotations

import asyncio

__all__ = ["Flight"]


class Flight:
    """One load in flight: the task the cache owns, and one future per waiting caller.

    A waiter awaits its own future, so cancelling it cancels only that future, never the
    task (the effect of asyncio.shield, with one callback for all waiters instead of two
    per waiter). No lock: the cache, its tasks and its waiters share one event loop.
    """

    __slots__ = ("task", "waiters")

    def __init__(self) -> None:
        self.task: asyncio.Task | None = None
        self.waiters: list[asyncio.Future] = []

    def join(self) -> asyncio.Future:
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        return waiter

    def settle(self, task: asyncio.Task) -> None:
        """Done callback of the task: hand its outcome to every waiter still waiting."""
        waiters, self.waiters = self.waiters, []
        if task.cancelled():
            for waiter in waiters:
                waiter.cancel()
            return
        error = task.exception()  # also marks it retrieved when every waiter has gone
        for waiter in waiters:
            if waiter.done():  # its caller was cancelled
                continue
            if error is None:
                waiter.set_result(task.result())
            else:
                waiter.set_exception(error)
