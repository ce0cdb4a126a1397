"""One LISTEN connection per process, fanned out to every open event stream.

A stream does not poll and does not LISTEN itself: it subscribes to its job here and sleeps
until the hub wakes it. The hub runs one `queue.notify.Listener` (a thread with its own
connection) and, for each notification, wakes the streams of that job only; after the
listener (re)connects it wakes every stream, because notifications sent while it was away
are lost. A woken stream re-reads the job's history from the tables: the notification is a
hint, the tables are the record. 200 streams cost one connection and no queries while idle.
A job notifies its claims and its finish only once it is watched (`queue.notify.watch`),
so a stream watches its job before its first read; the notification that a watch itself
sends (`JobEvent.watch`) reports no change and wakes nobody.

Everything but `close()` is called on the event loop. The listener's callback runs in its
own thread and only schedules work on the loop (`call_soon_threadsafe`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import psycopg

from ..queue.notify import JobEvent, Listener

__all__ = ["Hub", "Subscription"]


class Subscription:
    """One stream's interest in one job: `wait()` returns when something may have changed."""

    def __init__(self, hub: Hub, job_id: int) -> None:
        self.job_id = job_id
        self._hub = hub
        self._changed = asyncio.Event()

    def clear(self) -> None:
        """Call before reading the tables; a change during the read then still wakes `wait`."""
        self._changed.clear()

    async def wait(self) -> None:
        await self._changed.wait()

    @property
    def changed(self) -> bool:
        """Woken since the last clear(): something may have changed; read again."""
        return self._changed.is_set()

    def wake(self) -> None:
        self._changed.set()

    @property
    def closing(self) -> bool:
        return self._hub.closing


class Hub:
    """The fan-out. `start()` on the event loop, `stop()` when the app stops."""

    def __init__(self, connect: Callable[[], psycopg.Connection], *,
                 log: Callable[..., None] = lambda event, **fields: None) -> None:
        self._connect = connect
        self._log = log
        self._by_job: dict[int, set[Subscription]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: Listener | None = None
        self.closing = False  # set by close(): streams end, clients reconnect elsewhere
        self.listening = False  # the listener is connected and LISTENing
        self.notifications = 0
        # Counts every dispatch (a notification, a reconnect, close). A stream notes it
        # before its first read, which happens before it subscribes: if it has not moved
        # once the stream is subscribed, nothing was missed in between.
        self.version = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._listener = Listener(self._connect, self._from_listener, log=self._listener_log)
        self._listener.start()

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.stop()

    def close(self) -> None:
        """End every stream (shutdown). Safe from a signal handler or another thread."""
        self.closing = True
        self._soon(self._wake_all)

    # ------------------------------------------------------------------ streams

    def subscribe(self, job_id: int) -> Subscription:
        sub = Subscription(self, job_id)
        self._by_job.setdefault(job_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._by_job.get(sub.job_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._by_job[sub.job_id]

    @property
    def streams(self) -> int:
        """Open subscriptions (one per open event stream)."""
        return sum(len(subs) for subs in self._by_job.values())

    # ------------------------------------------------------------------ from the listener

    def _soon(self, callback: Callable[..., Any], *args: Any) -> None:
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to wake
                self._loop.call_soon_threadsafe(callback, *args)

    def _from_listener(self, event: JobEvent | None) -> None:
        self._soon(self._dispatch, event)

    def _listener_log(self, event: str, **fields: Any) -> None:
        if event == "listen-lost":
            self.listening = False
        self._log(event, **fields)

    def _dispatch(self, event: JobEvent | None) -> None:
        if event is not None and event.watch:  # a stream began to watch: nothing changed
            return
        self.version += 1
        if event is None:  # (re)connected: anything may have changed meanwhile
            self.listening = True
            self._wake_all()
            return
        self.notifications += 1
        for sub in self._by_job.get(event.job_id, ()):
            sub.wake()

    def _wake_all(self) -> None:
        self.version += 1
        for subs in self._by_job.values():
            for sub in subs:
                sub.wake()
