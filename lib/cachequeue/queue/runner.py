"""The long-running worker: claim, run handlers in threads, renew leases, stop gracefully, reconnect.

One thread (the one that calls `Worker.run`) does all the talking to the database, on one
connection: claims (`jobs.claim_many` for the free slots), heartbeats (`workers.beat`
renews every held lease in one statement), results (`worker.record`), hand-backs
(`jobs.release`). Handlers run in their own daemon threads, at most `concurrency` at once,
with no transaction open; they hand their result back through a queue. A `notify.Listener`
thread, on a second connection, wakes the loop when a job becomes pending; polling every
`poll` seconds covers what sends no notification (expired leases, retries coming due) and
a listener that was disconnected. Two long-lived connections, reopened by the loop itself,
are all it needs: a pool (psycopg_pool) would add a dependency and hide the reconnects that
this class exists to show.

Stopping follows River's Stop/StopAndCancel and procrastinate's graceful timeout: `stop()`
stops claiming at once and gives running handlers `shutdown_timeout` seconds; whatever
still runs then is handed back (`jobs.release`: pending at once, attempt 'released').
`stop_now()` hands back at once. Both only set a flag and write a byte to a pipe, so they
are safe to call from a signal handler or another thread; the signals themselves are
handled at the edge (the `cachequeue worker` command).

A lost connection (the server restarted, the network dropped) is logged, retried after a
bounded, jittered backoff, and the worker carries on where it was: handlers keep running,
results wait in the queue, leases are renewed as soon as it is back. Nothing is reset.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import psycopg

from ..checks import check_bool, check_callable, check_int, check_seconds, check_text
from . import fairness, jobs, workers
from .inflight import InFlight
from .limits import check_lease
from .logline import LOGGER, log_line
from .notify import CONNECTION_ERRORS, JobEvent, Listener, one_line
from .retry import RetryPolicy
from .worker import check_handlers

__all__ = ["Worker"]


class Worker:
    """A worker that runs until stopped. `run()` blocks and returns its stats (a Counter).

    `connect()` returns a new autocommit connection whose search_path is the queue's schema
    (e.g. `lambda: db.connect("ch06")`). `handlers` maps each kind to `handler(payload)` or
    `handler(payload, ctx)` (see `context.JobContext`). `heartbeat` is the seconds between
    lease renewals (default lease / 3; 0 turns renewal off, for demonstrations only).
    `fair=True` claims with `fairness.claim_fair` (fewest running per tenant first, at most
    `tenant_cap` running jobs per tenant) instead of oldest first.
    `stats` counts: claimed, finished, retrying, failed, rejected (a report refused because
    the lease was lost), lost (a heartbeat found the lease gone), released (handed back),
    abandoned (could not be handed back: the database was unreachable), disconnects (lost
    or refused connections) and statements (sent by the loop; the listener's are in
    `listener_statements`).
    """

    def __init__(self, connect: Callable[[], psycopg.Connection],
                 handlers: Mapping[str, Callable[..., Any]], *, name: str | None = None,
                 concurrency: int = 1, lease: float = 30.0, poll: float = 1.0,
                 heartbeat: float | None = None, shutdown_timeout: float = 30.0,
                 kinds: Iterable[str] | None = None, policy: RetryPolicy | None = None,
                 listen: bool = True, backoff: RetryPolicy | None = None,
                 rng: random.Random | None = None, fair: bool = False,
                 tenant_cap: int | None = None) -> None:
        self._connect = check_callable(connect, "connect", "a callable returning a connection")
        self._kinds = check_handlers(handlers, kinds)
        self.name = check_text(name if name is not None else f"{socket.gethostname()}-{os.getpid()}",
                               "name")
        self._concurrency = check_int(concurrency, "concurrency", minimum=1, maximum=1000)
        self._lease = check_lease(lease)
        self._poll = check_seconds(poll, "poll", upper=3600.0)
        self._heartbeat = self._lease / 3 if heartbeat is None else check_seconds(
            heartbeat, "heartbeat", allow_zero=True)
        if self._heartbeat >= self._lease:
            raise ValueError(f"heartbeat ({self._heartbeat:g} s) must be shorter than the lease "
                             f"({self._lease:g} s), or 0 to turn renewal off")
        self._shutdown_timeout = check_seconds(shutdown_timeout, "shutdown_timeout",
                                               allow_zero=True, upper=24 * 3600.0)
        self._listen = check_bool(listen, "listen")
        # The fair claim (fairness.claim_fair) instead of the oldest-first one; its indexes
        # are installed when the worker first connects, like the workers table.
        self._fair = check_bool(fair, "fair")
        self._tenant_cap = None if tenant_cap is None else check_int(tenant_cap, "tenant_cap",
                                                                     minimum=1)
        if self._tenant_cap is not None and not self._fair:
            raise ValueError("tenant_cap needs fair=True (only the fair claim counts per tenant)")
        self._backoff = backoff or RetryPolicy(base=0.05, cap=2.0)
        self._rng = rng or random.Random()
        self.stats: Counter = Counter()
        self.ready = threading.Event()  # set once connected, registered and listening
        # A socket pair, not os.pipe(): a handler thread that pokes after the loop closed it
        # gets an error from the closed socket object, never a write into a reused fd.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)
        self._wake_r.setblocking(False)
        self._in_flight = InFlight(self.name, connect, handlers, poke=self._poke, log=self._log,
                              stats=self.stats, policy=policy, rng=self._rng)

        self._conn: psycopg.Connection | None = None
        self._listener: Listener | None = None
        self._listening = False
        self._want_claim = True
        self._maybe_more = True
        self._beat_soon = False
        self._next_claim_at = self._next_beat_at = self._reconnect_at = 0.0
        self._failures = 0
        self._stop_requested = self._hand_back_now = False
        self._deadline: float | None = None
        self._ran = False
        self._installed = False

    # ------------------------------------------------------------------ control

    @property
    def stopping(self) -> bool:
        return self._stop_requested

    def stop(self) -> None:
        """Stop claiming now; hand back what still runs after shutdown_timeout. Signal-safe."""
        self._stop_requested = True
        self._poke()

    def stop_now(self) -> None:
        """Stop claiming and hand back every running job at once. Signal-safe."""
        self._stop_requested = self._hand_back_now = True
        self._poke()

    @property
    def listener_statements(self) -> int:
        return self._listener.statements if self._listener else 0

    def _poke(self) -> None:
        with contextlib.suppress(OSError):  # full (the loop wakes anyway) or already closed
            self._wake_w.send(b"x")

    def _log(self, event: str, **fields: Any) -> None:
        LOGGER.info(log_line(self.name, event, **fields))

    # ------------------------------------------------------------------ the loop

    def run(self) -> Counter:
        """Work until stopped; return the stats. A Worker runs once."""
        if self._ran:
            raise RuntimeError("this Worker has already run; create a new one")
        self._ran = True
        self._log("starting", pid=os.getpid(), concurrency=self._concurrency, lease=self._lease,
                  poll=self._poll, heartbeat=self._heartbeat, listen=self._listen,
                  kinds=",".join(self._kinds))
        if self._listen:
            self._listener = Listener(self._connect, self._on_event, log=self._log,
                                      backoff=self._backoff, rng=self._rng).start()
        try:
            while True:
                self._drain_wakeups()
                now = time.monotonic()
                if self._stop_requested and self._deadline is None:
                    self._deadline = now + (0.0 if self._hand_back_now else self._shutdown_timeout)
                    self._log("stopping", in_hand=len(self._in_flight),
                              timeout=0 if self._hand_back_now else self._shutdown_timeout)
                idle = not self._in_flight and not self._in_flight.reports_waiting
                if self._stop_requested and idle:
                    break
                try:
                    self._step(now)
                except CONNECTION_ERRORS as exc:
                    self._disconnected(exc)
                    if self._hand_back_due(time.monotonic()):
                        self._in_flight.abandon()
                self._sleep()
        finally:
            self._close()
        self._log("stopped", **{k: v for k, v in sorted(self.stats.items())},
                  listener_statements=self.listener_statements)
        return self.stats

    def _step(self, now: float) -> None:
        if self._conn is None:
            if now < self._reconnect_at and not self._hand_back_due(now):
                return
            self._open()
        if self._in_flight.report(self._conn):
            self._want_claim = self._want_claim or self._maybe_more  # a slot is free again
        if self._hand_back_due(now):
            reason = ("worker stopped at once" if self._hand_back_now
                      else f"worker stopped; still running after {self._shutdown_timeout:g} s")
            self._in_flight.hand_back(self._conn, reason)
            return
        if self._heartbeat and (now >= self._next_beat_at or (self._beat_soon and self._in_flight)):
            self._beat(now)
        if not self._stop_requested:
            self._claim(now)
        if not self.ready.is_set() and (self._listening or not self._listen):
            # Connected, registered, listening, and the first look for work is done.
            self._log("ready", statements=self.stats["statements"],
                      listener_statements=self.listener_statements)
            self.ready.set()

    def _sleep(self) -> None:
        now = time.monotonic()
        if self._in_flight.reports_waiting or (self._conn is not None and self._claim_wanted(now)):
            return
        wake = [now + self._poll]
        if self._conn is None:
            wake.append(self._reconnect_at)
        elif self._heartbeat:
            wake.append(self._next_beat_at)
        if not self._stop_requested and self._free():
            wake.append(self._next_claim_at)
        if self._deadline is not None:
            wake.append(self._deadline)
        select.select([self._wake_r], [], [], max(0.0, min(wake) - now))

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(512):
                pass
        except BlockingIOError:
            pass

    def _hand_back_due(self, now: float) -> bool:
        return self._hand_back_now or (self._deadline is not None and now >= self._deadline)

    # ------------------------------------------------------------------ the database side

    def _open(self) -> None:
        conn = self._connect()
        try:
            if not self._installed:  # the workers table, once per worker (IF NOT EXISTS)
                workers.install(conn)
                if self._fair:
                    fairness.install(conn)
                    self.stats["statements"] += 1
                self._installed = True
                self.stats["statements"] += 1
            workers.register(conn, self.name)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self.stats["statements"] += 1
        if self._failures:
            self._log("reconnected", after_failures=self._failures)
        self._failures = 0
        self._want_claim = True
        self._next_beat_at = 0.0  # renew at once: leases ran on while we were away

    def _disconnected(self, exc: BaseException) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already broken; closing is best effort
                self._conn.close()
            self._conn = None
        self._in_flight.connection_lost()
        self._failures += 1
        self.stats["disconnects"] += 1
        delay = self._backoff.delay(min(self._failures, 30), self._rng)
        self._reconnect_at = time.monotonic() + delay
        self._log("reconnecting", retry_in=round(delay, 3), error=one_line(exc))

    def _free(self) -> int:
        return self._concurrency - len(self._in_flight)

    def _claim_wanted(self, now: float) -> bool:
        return (not self._stop_requested and self._free() > 0
                and (self._want_claim or now >= self._next_claim_at))

    def _claim(self, now: float) -> None:
        if not self._claim_wanted(now):
            return
        free = self._free()
        self._want_claim = False  # a notification during the claim sets it again
        self._next_claim_at = now + self._poll
        if self._fair:
            claims = fairness.claim_fair(self._conn, free, lease=self._lease, kinds=self._kinds,
                                         worker=self.name, tenant_cap=self._tenant_cap)
        else:
            claims = jobs.claim_many(self._conn, free, lease=self._lease, kinds=self._kinds,
                                     worker=self.name)
        self.stats["statements"] += 1
        self._maybe_more = len(claims) == free
        for claim in claims:
            self._in_flight.start(claim)

    def _beat(self, now: float) -> None:
        self._beat_soon = False
        self._next_beat_at = now + self._heartbeat
        claims = self._in_flight.to_renew()
        held = workers.beat(self._conn, self.name, claims, self._lease)
        self.stats["statements"] += 1
        self._in_flight.renewed(claims, held)

    def _on_event(self, event: JobEvent | None) -> None:
        """From the listener thread: only flags and a wake-up byte."""
        if event is None:
            self._listening = True
            self._want_claim = True
        elif event.state == "pending" and event.kind in self._kinds:
            self._want_claim = True
        elif event.state == "cancelled":
            self._beat_soon = True
        else:
            return
        self._poke()

    def _close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
        if self._conn is not None:
            with contextlib.suppress(*CONNECTION_ERRORS):
                workers.deregister(self._conn, self.name)
                self.stats["statements"] += 1
            self._conn.close()
            self._conn = None
        self._wake_r.close()
        self._wake_w.close()
