"""The long-running worker: claim, run handlers in threads, renew leases, stop gracefully, reconnect.

`Worker.run()` is a loop around `Worker.run_once()`, one turn that returns what it did (a
Counter): report the results of finished handlers (failures at once; successes into the
completion batch, flushed by one fenced `jobs.finish_many` when `batch` results wait or the
oldest waited `batch_wait` seconds), hand back if the shutdown deadline passed, renew
leases if due (`registry.beat`, every held lease in one statement), claim for the free
slots (`jobs.claim_many`). Between turns `run()` sleeps until something needs a turn.
Tests drive `run_once()` turn by turn, with a manual `clock`.

One thread (the one that calls `run` or `run_once`) does all the talking to the database,
on one connection. Handlers run on daemon threads, at most `concurrency` at once, with no
transaction open; they hand their result back through a queue. The same connection LISTENs
on the jobs channel (`notify.listen`), and the loop's wait watches its socket beside the
handlers' wake-up socket: a notification that a job became pending wakes the loop itself,
which claims at once. (A `notify.Listener` thread on a second connection did this before:
every wake-up then took two threads' turns, the listener's and the loop's, and on a busy
machine each turn can wait for a core; chapter 11's latency measurement.) Polling every
`poll` seconds covers what sends no notification (expired leases, retries coming due) and
the notifications lost while the connection was down: after every (re)connect the loop
LISTENs again and looks for work. One long-lived connection, reopened by the loop itself,
is all it needs: a pool (psycopg_pool) would add a dependency and hide the reconnects that
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
A flush whose answer was lost with the connection is sent again; rows it had already
committed are recognised from their attempt rows, not counted as refused.

`prefetch=N` is the throughput mode (`queue.prefetch`): up to `concurrency + N` jobs are
claimed by one statement into a local queue that the handler threads take from, refilled
once it is down to half; their leases are renewed like the running ones; `stop()` hands
the jobs still waiting locally back at once, and only the running ones get the timeout.
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
from . import fairness, jobs, registry
from .inflight import InFlight
from .limits import check_lease
from .logline import flush_turn, info, info_each, one_line
from .notify import CONNECTION_ERRORS, JobEvent, event, listen
from .prefetch import check_prefetch, refill_at
from .retry import RetryPolicy
from .single_pass import check_handlers

__all__ = ["BATCH", "BATCH_WAIT", "POLL_ALONE", "POLL_LISTENING", "Worker"]

BATCH = 100  # successes per completion statement, at most
BATCH_WAIT = 0.05  # seconds the first waiting success waits for more (River: 50 ms and up)
POLL_LISTENING = 10.0  # seconds between looks for work when notifications wake the worker
POLL_ALONE = 1.0  # ... and when they do not (listen=False)


class Worker:
    """A worker that runs until stopped. `run()` blocks and returns its stats (a Counter).

    `connect()` returns a new autocommit connection whose search_path is the queue's schema
    (e.g. `lambda: db.connect("ch06")`). `handlers` maps each kind to `handler(payload)` or
    `handler(payload, ctx)` (see `context.JobContext`). `heartbeat` is the seconds between
    lease renewals (default lease / 3, less than lease / 2 if given: one renewal may be late
    or lost and the next still comes in time; 0 turns renewal off, for demonstrations only).
    `fair=True` claims with `fairness.claim_fair` (fewest running per tenant first, at most
    `tenant_cap` running jobs per tenant) instead of oldest first.
    `batch` is the most successes one completion statement writes (`jobs.finish_many`,
    each row fenced by its own lease token) and `batch_wait` the seconds the first of them
    waits for more; `batch=1` finishes every job in its own durable commit.
    `prefetch` (0: off) is the throughput mode: up to `concurrency + prefetch` jobs held,
    the ones not running waiting in a local queue with leases renewed by the heartbeat
    (so it needs heartbeats), handed back at once by `stop()` (see `queue.prefetch`).
    `poll` defaults to 10 s when listening (notifications do the waking) and 1 s when not.
    `clock` (seconds, monotonic) schedules polls, heartbeats, flushes and the shutdown
    deadline; a test passes a `clock.ManualClock` and calls `run_once()` itself.
    `stats` counts: claimed, finished, retrying, failed, rejected (a report refused because
    the lease was lost), lost (a heartbeat found the lease gone), released (handed back),
    abandoned (could not be handed back: the database was unreachable), disconnects (lost
    or refused connections), batches (finish_many statements) and statements (sent by the
    loop but the ones that start listening, which are in `listener_statements`).
    """

    def __init__(self, connect: Callable[[], psycopg.Connection],
                 handlers: Mapping[str, Callable[..., Any]], *, name: str | None = None,
                 concurrency: int = 1, lease: float = 30.0, poll: float | None = None,
                 heartbeat: float | None = None, shutdown_timeout: float = 30.0,
                 kinds: Iterable[str] | None = None, policy: RetryPolicy | None = None,
                 listen: bool = True, backoff: RetryPolicy | None = None,
                 rng: random.Random | None = None, fair: bool = False,
                 tenant_cap: int | None = None, batch: int = BATCH, batch_wait: float = BATCH_WAIT,
                 prefetch: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self._connect = check_callable(connect, "connect", "a callable returning a connection")
        self._kinds = check_handlers(handlers, kinds)
        self.name = check_text(name if name is not None else f"{socket.gethostname()}-{os.getpid()}",
                               "name")
        self._concurrency = check_int(concurrency, "concurrency", minimum=1, maximum=1000)
        self._lease = check_lease(lease)
        self._listen = check_bool(listen, "listen")
        if poll is None:
            poll = POLL_LISTENING if self._listen else POLL_ALONE
        self._poll = check_seconds(poll, "poll", upper=3600.0)
        self._heartbeat = self._lease / 3 if heartbeat is None else check_seconds(
            heartbeat, "heartbeat", allow_zero=True)
        # Less than half the lease: a renewal that is late or lost (a slow turn, a dropped
        # connection) must leave time for the next one before the lease runs out.
        if self._heartbeat >= self._lease / 2:
            raise ValueError(f"heartbeat ({self._heartbeat:g} s) must be less than half the "
                             f"lease ({self._lease:g} s), or 0 to turn renewal off")
        self._shutdown_timeout = check_seconds(shutdown_timeout, "shutdown_timeout",
                                               allow_zero=True, upper=24 * 3600.0)
        # The fair claim (fairness.claim_fair) instead of the oldest-first one; its indexes
        # are installed when the worker first connects, like the workers table.
        self._fair = check_bool(fair, "fair")
        self._tenant_cap = None if tenant_cap is None else check_int(tenant_cap, "tenant_cap",
                                                                     minimum=1)
        if self._tenant_cap is not None and not self._fair:
            raise ValueError("tenant_cap needs fair=True (only the fair claim counts per tenant)")
        self._batch = check_int(batch, "batch", minimum=1, maximum=1000)
        self._batch_wait = check_seconds(batch_wait, "batch_wait", allow_zero=True, upper=60.0)
        if self._batch > 1 and self._batch_wait >= self._lease / 2:
            raise ValueError(f"batch_wait ({self._batch_wait:g} s) must be well within the lease "
                             f"({self._lease:g} s): a batched result holds its lease until the flush")
        self._clock = check_callable(clock, "clock", "a callable returning seconds")
        self._prefetch = check_prefetch(prefetch)
        if self._prefetch and not self._heartbeat:
            raise ValueError("prefetch needs heartbeats: the leases of the jobs waiting in the "
                             "local queue are kept by renewing them (heartbeat > 0)")
        if self._prefetch and self._fair:
            raise ValueError("prefetch and fair do not go together: jobs fetched ahead are "
                             "held by one worker whatever their tenant")
        self._refill_at = refill_at(self._concurrency, self._prefetch)
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
                                   log_each=self._log_each,
                                   stats=self.stats, policy=policy, rng=self._rng,
                                   lease=self._lease, batch=self._batch,
                                   batch_wait=self._batch_wait, prefetch=self._prefetch,
                                   concurrency=self._concurrency, clock=self._clock)

        self._conn: psycopg.Connection | None = None
        self._listening = False  # the connection LISTENs (set by _open, cleared when it drops)
        self._listen_statements = 0
        self._want_claim = True
        self._maybe_more = True
        self._beat_soon = False
        self._next_claim_at = self._next_beat_at = self._reconnect_at = 0.0
        self._failures = 0
        self._stop_requested = self._hand_back_now = False
        self._deadline: float | None = None
        self._waiting_handed_back = False
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
        """Statements sent to start listening (the channel's name and LISTEN, at every
        (re)connect); waiting for notifications sends none."""
        return self._listen_statements

    def _poke(self) -> None:
        with contextlib.suppress(OSError):  # full (the loop wakes anyway) or already closed
            self._wake_w.send(b"x")

    def _log(self, event: str, **fields: Any) -> None:
        info(self.name, event, **fields)

    def _log_each(self, lines: list[tuple[str, int, int]]) -> None:
        info_each(self.name, lines)

    # ------------------------------------------------------------------ the loop

    def run(self) -> Counter:
        """Work until stopped; return the stats. A Worker runs once."""
        if self._ran:
            raise RuntimeError("this Worker has already run; create a new one")
        self._ran = True
        self._log("starting", pid=os.getpid(), concurrency=self._concurrency, lease=self._lease,
                  poll=self._poll, heartbeat=self._heartbeat, listen=self._listen,
                  batch=self._batch, batch_wait=self._batch_wait, prefetch=self._prefetch,
                  kinds=",".join(self._kinds))
        try:
            while True:
                self.run_once()
                if self.finished:
                    break
                self._sleep()
        finally:
            self.close()
        self._log("stopped", **{k: v for k, v in sorted(self.stats.items())},
                  listener_statements=self.listener_statements)
        if self._prefetch:
            flush_turn()
        return self.stats

    def run_once(self) -> Counter:
        """One turn of the loop; return what it did: a Counter with the keys of `stats`.

        In this order: (re)connect if due; report finished handlers' results (failures at
        once, successes into the batch) and flush the batch if it is full, due, or the
        worker is stopping; hand back what still runs once the shutdown deadline passed;
        renew the held leases if a heartbeat is due; claim for the free slots if a claim is
        wanted (a notification, a freed slot, the poll). A lost connection ends the turn:
        it is counted in `disconnects` and retried after a backoff, nothing is dropped.
        With listen=True, the connection LISTENs from the first turn on, and each turn reads
        the notifications that arrived (`wait()` wakes on them).
        """
        before = self.stats.copy()
        self._in_flight.woken()  # before the drain: a result after it pokes again
        self._drain_wakeups()
        now = self._clock()
        if self._stop_requested and self._deadline is None:
            self._deadline = now + (0.0 if self._hand_back_now else self._shutdown_timeout)
            self._log("stopping", in_hand=len(self._in_flight),
                      timeout=0 if self._hand_back_now else self._shutdown_timeout)
        try:
            self._step(now)
            self._hear()  # what came in with this turn's answers, before the loop waits
        except CONNECTION_ERRORS as exc:
            self._disconnected(exc)
            if self._hand_back_due(self._clock()):
                self._in_flight.abandon()
        finally:
            if self._prefetch:  # the turn's lines in one write (logline.LineHandler)
                flush_turn()
        return self.stats - before

    @property
    def batched(self) -> int:
        """Successful results waiting in the completion batch (not written yet)."""
        return self._in_flight.batched

    @property
    def finished(self) -> bool:
        """Stopping, and nothing is held any more: run() returns."""
        return (self._stop_requested and not self._in_flight
                and not self._in_flight.reports_waiting)

    def _step(self, now: float) -> None:
        if self._conn is None:
            if now < self._reconnect_at and not self._hand_back_due(now):
                return
            self._open()
        self._hear()
        if self._in_flight.report(self._conn, now, flush=self._stop_requested):
            self._want_claim = self._want_claim or self._maybe_more  # a slot is free again
        if self._stop_requested and self._prefetch and not self._waiting_handed_back:
            # Jobs fetched ahead and not started go back at once, not at lease expiry.
            self._in_flight.hand_back_waiting(self._conn, "worker stopped; the job was still "
                                                          "waiting in its local queue")
            self._waiting_handed_back = True
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
        """Wait (on real time) until the next turn has something to do."""
        now = self._clock()
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
        flush_at = self._in_flight.flush_due_at()
        if flush_at is not None:
            wake.append(flush_at)
        select.select(self._waited(), [], [], max(0.0, min(wake) - now))

    def wait(self, timeout: float) -> bool:
        """Block until a handler finished, a notification arrived or stop() poked the loop,
        or `timeout` seconds passed; True if woken. For callers of run_once()."""
        readable, _, _ = select.select(self._waited(), [], [], check_seconds(
            timeout, "timeout", allow_zero=True))
        return bool(readable)

    def _waited(self) -> list:
        """What the loop's wait watches: the wake-up socket, and the connection's while it
        listens (readable: a notification, or the server closed it; the next turn reads it)."""
        if self._listening and self._conn is not None:
            return [self._wake_r, self._conn.fileno()]
        return [self._wake_r]

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
                registry.install(conn)
                if self._fair:
                    fairness.install(conn)
                    self.stats["statements"] += 1
                self._installed = True
                self.stats["statements"] += 1
            registry.register(conn, self.name)
        except BaseException:
            conn.close()
            raise
        self.stats["statements"] += 1
        if self._listen:  # after every (re)connect: notifications sent meanwhile are lost,
            try:          # so _want_claim below makes the loop look at the table
                listen(conn)
            except BaseException:
                conn.close()
                raise
            self._listen_statements += 2
            self._listening = True
        self._conn = conn
        if self._failures:
            self._log("reconnected", after_failures=self._failures)
        self._failures = 0
        self._want_claim = True
        self._next_beat_at = 0.0  # renew at once: leases ran on while we were away

    def _disconnected(self, exc: BaseException) -> None:
        self._listening = False
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already broken; closing is best effort
                self._conn.close()
            self._conn = None
        self._in_flight.connection_lost()
        self._failures += 1
        self.stats["disconnects"] += 1
        delay = self._backoff.delay(min(self._failures, 30), self._rng)
        self._reconnect_at = self._clock() + delay
        self._log("reconnecting", retry_in=round(delay, 3), error=one_line(exc))

    def _free(self) -> int:
        """Jobs the next claim may take: free slots; in the throughput mode, enough to fill
        the local queue, once it is down to half (and none before)."""
        if not self._prefetch:
            return self._concurrency - self._in_flight.running
        unfinished = self._in_flight.running
        if unfinished > self._refill_at:
            return 0
        return self._concurrency + self._prefetch - unfinished

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
        if self._prefetch and claims:  # one line per claim statement, not per job
            self._log("prefetched", jobs=len(claims), first_job=claims[0].job_id,
                      last_job=claims[-1].job_id)
        for claim in claims:
            self._in_flight.start(claim, now)

    def _beat(self, now: float) -> None:
        self._beat_soon = False
        self._next_beat_at = now + self._heartbeat
        claims = self._in_flight.to_renew()
        held = registry.beat(self._conn, self.name, claims, self._lease)
        self.stats["statements"] += 1
        self._in_flight.renewed(claims, held, now)

    def _hear(self) -> None:
        """Take the notifications that arrived: the ones psycopg kept while statements ran,
        and what the socket holds now (never waits)."""
        if self._listening and self._conn is not None:
            for notify in self._conn.notifies(timeout=0):
                self._on_event(event(notify))

    def _on_event(self, job: JobEvent) -> None:
        """A job became pending: claim; one was cancelled: renew (and so learn) soon."""
        if job.state == "pending" and job.kind in self._kinds:
            self._want_claim = True
        elif job.state == "cancelled":
            self._beat_soon = True

    def abandon(self) -> None:
        """Drop everything at once and send nothing more: no flush, no hand-back, no
        deregistration, as a crash would. Batched results are lost (their jobs run again
        once their leases expire: at-least-once); for demonstrations and tests."""
        self._in_flight.close()
        self._listening = False
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._wake_r.close()
        self._wake_w.close()

    def close(self) -> None:
        """Deregister, close the connection (run() does it at the end;
        call it after driving run_once() yourself)."""
        self._in_flight.close()
        self._listening = False
        if self._conn is not None:
            with contextlib.suppress(*CONNECTION_ERRORS):
                registry.deregister(self._conn, self.name)
                self.stats["statements"] += 1
            self._conn.close()
            self._conn = None
        self._wake_r.close()
        self._wake_w.close()
