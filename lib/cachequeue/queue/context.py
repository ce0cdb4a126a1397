"""What a running handler may know about its job: the claim, and whether it should stop.

The long-running worker (`worker.Worker`) passes a `JobContext` as the second argument to
handlers that accept two (`def handle(payload, ctx)`); handlers that take only the payload
keep working unchanged. The worker sets the context's stop reason when its heartbeat finds
the lease lost (expired and taken over, or the job cancelled) or when it hands the job back
at shutdown. A cooperative handler checks `ctx.should_stop()` or waits with `ctx.wait()`
between steps and returns early; one that does not is not interrupted (Python cannot stop
a thread), but whatever it reports afterwards is refused by the lease token.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from ..checks import check_seconds
from .jobs import Claim
from .logline import info

__all__ = ["HANDED_BACK", "LOST", "JobContext", "takes_context"]

_EVENT_LOCK = threading.Lock()  # makes each context's Event once, when first waited on

LOST = "lost"  # the heartbeat found the lease gone: someone else may run the job now
HANDED_BACK = "handed back"  # the worker is stopping and gave the job back to the queue


def takes_context(handler: Callable[..., Any]) -> bool:
    """True when `handler` can be called as handler(payload, ctx)."""
    try:
        inspect.signature(handler).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins): call it with the payload only
        return False
    return True


class JobContext:
    """The running attempt (`claim`), the worker's `name`, and a stop signal from outside."""

    def __init__(self, claim: Claim, worker: str,
                 connect: Callable[[], psycopg.Connection]) -> None:
        self.claim = claim
        self.worker = worker
        self._connect = connect
        # Made by the first wait(): most handlers never wait, and an Event (a Condition and
        # its lock) per job was a tenth of the throughput mode's Python time.
        self._stop: threading.Event | None = None
        self.reason: str | None = None  # LOST or HANDED_BACK once set

    @property
    def lost(self) -> bool:
        """The lease is gone: another attempt may be running; publish nothing."""
        return self.reason == LOST

    def should_stop(self) -> bool:
        """True once the lease was lost or the job handed back: stop at the next boundary."""
        return self.reason is not None

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, returning early when the handler should stop.

        Returns True if it was woken to stop, False when the time simply ran out.
        """
        seconds = check_seconds(seconds, "seconds", allow_zero=True)
        stop = self._stop
        if stop is None:
            with _EVENT_LOCK:
                if self._stop is None:
                    self._stop = threading.Event()
                    if self.reason is not None:  # halted before anyone waited
                        self._stop.set()
                stop = self._stop
        return stop.wait(seconds)

    def connect(self) -> psycopg.Connection:
        """A new autocommit connection to the worker's database and schema (close it)."""
        return self._connect()

    def report(self, event: str, **fields: Any) -> None:
        """Write one log line for this attempt, e.g. ctx.report("started"): a moment that
        a supervisor (a test, a notebook) can wait for."""
        info(self.worker, event, job=self.claim.job_id, attempt=self.claim.attempt, **fields)

    def halt(self, reason: str) -> None:
        """Ask the handler to stop (called by the worker, not by handlers)."""
        if self.reason is None:
            self.reason = reason
        stop = self._stop  # read after reason is set: a wait() that makes it later sees reason
        if stop is not None:
            stop.set()
