"""The re-reads of open event streams: one read per job at a time, waiting for a slot.

A woken stream must read its job's history again (the notification is a hint, the tables
are the record). Those reads are not requests: a stream already answered 200, so a read
that is shed (503) or times out cannot become a status code any more. They therefore do
not go through `Service.call` and its shedding budget: they wait for one of `slots`
connections of their own (a `CapacityLimiter`, default half the pool, so requests keep
the other half), however many streams woke at once.

And they are shared: every stream of one job that woke before the job's next read started
joins that read (at the smallest Last-Event-ID among them) and takes the events after its
own. 500 streams on one job that changes state cost one read, not 500. A read joins only a
read that has not started yet (it is still waiting for its slot), so it always sees every
change committed before its stream was woken.

    reads = SharedReads(service, slots=4)
    batch = await reads.read((tenant_id, job_id), after, lambda conn, after: history(...))
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..checks import check_int
from .events import History

__all__ = ["SharedReads"]


@dataclass
class _Read:
    after: int
    future: asyncio.Future = field(repr=False)


class SharedReads:
    """Shared, slot-limited history reads (see the module docstring). `run(fn, args,
    kwargs)` runs fn(conn, *args) with a pooled connection (Service._run)."""

    def __init__(self, run: Callable[..., Any], *, slots: int) -> None:
        self._run = run
        self.slots = check_int(slots, "slots", minimum=1, maximum=100)
        self._limiter: anyio.CapacityLimiter | None = None
        self._queued: dict[Hashable, _Read] = {}
        self.reads = 0  # reads made (tests, metrics)
        self.joined = 0  # stream reads served by a read another stream asked for

    def open(self) -> None:
        """On the event loop, when the service opens."""
        self._limiter = anyio.CapacityLimiter(self.slots)

    async def read(self, key: Hashable, after: int,
                   fn: Callable[[Any, int], History]) -> History:
        """fn(conn, after') for this key once, shared (after' <= after); the events after
        `after`. Raises what the read raised (a database error) to every stream that
        joined it."""
        queued = self._queued.get(key)
        if queued is None:
            loop = asyncio.get_running_loop()
            queued = self._queued[key] = _Read(after, loop.create_future())
            queued.future.add_done_callback(_retrieved)  # every joiner may have gone
            task = asyncio.ensure_future(self._perform(key, queued, fn))
            task.add_done_callback(_retrieved)
        else:
            queued.after = min(queued.after, after)
            self.joined += 1
        found = await asyncio.shield(queued.future)
        return History(found.state, [e for e in found.events if e.seq > after])

    async def _perform(self, key: Hashable, queued: _Read, fn) -> None:
        try:
            async with self._limiter:
                # From here on the read is under way: later wake-ups start a read of their own.
                if self._queued.get(key) is queued:
                    del self._queued[key]
                after = queued.after
                self.reads += 1
                found = await anyio.to_thread.run_sync(self._run, fn, (after,), {})
        except BaseException as exc:
            if self._queued.get(key) is queued:
                del self._queued[key]
            if not queued.future.done():
                if isinstance(exc, asyncio.CancelledError):
                    queued.future.cancel()
                else:
                    queued.future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        queued.future.set_result(found)


def _retrieved(done: asyncio.Future) -> None:
    if not done.cancelled():
        done.exception()  # handed to the readers through the future: nothing to report
