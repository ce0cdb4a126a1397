"""The jobs a worker holds right now: their handlers, their results, the completion batch, their hand-back.

`InFlight` belongs to one `worker.Worker` and is only touched by its loop thread, except
for two thread-safe steps: a handler thread appends its result to a deque and pokes the
loop awake. Each held job is keyed by its lease token (one worker may briefly hold two
attempts of one job: the old one lost, the new one claimed). Handlers run on reused daemon
threads (`_Threads`: a thread that finished a job waits for the next one).

Results are reported on the loop's connection. A failure is reported at once
(`single_pass.record`: the retry decision is per job). A success waits in the completion
batch until `batch` results wait or the oldest has waited `batch_wait` seconds, whichever
comes first; then ONE `jobs.finish_many` writes them all, each row checked against its own
lease token, so a late flush after a takeover is refused row by row and the other rows
commit. With `batch=1` every result is its own durable commit (`jobs.finish`). A result in
the batch no longer holds a thread (its slot is free for the next claim) but still holds
its lease, which the heartbeat keeps renewing. A crash before the flush loses only the
acknowledgements: those jobs run again once their leases expire (at-least-once, as before).
Every database call counts one statement in the worker's stats and writes one log line per
outcome.

With `prefetch` > 0 (the throughput mode, `queue.prefetch`) a claimed job does not get a
thread of its own at once: it waits in a local queue (a `SimpleQueue`) that `concurrency`
threads take from one job after another, so starting a job costs the loop no turn. A job
in the local queue is held like a running one (its lease is renewed by the heartbeat);
a thread that takes a job whose lease was lost or ran out meanwhile does not run it: the
loop hands it back (`jobs.release`, fenced like every report: refused if another attempt
holds the job), never fails it, so a job that never ran uses up no attempt and no backoff,
and the hand-back counts toward the hand-back cap (limits.MAX_HANDBACKS) like any other.
`hand_back_waiting` gives the jobs still in the local queue back in one statement, which
counts each of them toward that cap as well (`prefetch.release_many`).
The mode also sends each due batch (`jobs.finish_many`, fenced as ever) on a connection of
its own, from a sender thread (`_Sender`), so the server works on a flush while the loop
claims on its own connection; the rows stay held (and renewed) until the answer is back,
and the `finished` lines are written then. A batch whose answer was lost with the sender's
connection is sent again on the loop's connection, where the lost-answer recovery lives.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from typing import Any

import psycopg

from ..errors import InvalidJob
from . import jobs, prefetch
from .context import HANDED_BACK, LOST, JobContext, takes_context
from .limits import to_json
from .logline import one_line
from .notify import CONNECTION_ERRORS
from .retry import RetryPolicy
from .single_pass import Result, execute, record

__all__ = ["InFlight"]

# How a report ended, as the log and the stats name it (single_pass.record's outcome -> event).
_EVENTS = {"done": "finished", "pending": "retrying", "failed": "failed", "lost": "rejected"}
_SETTLED = {"done": "done", "retry": "pending", "failed": "failed"}  # attempt outcome -> state


@dataclass
class _Running:
    claim: jobs.Claim
    ctx: JobContext
    expires: float  # when the lease runs out unless renewed (the worker's clock)
    unsure: bool = False  # a report was sent but the connection dropped before the answer


class _Threads:
    """Daemon threads that run one job after another: no thread start per job.

    `idle` counts the threads that are waiting (or about to wait) for a task; a task is
    only queued for one of them, so no task ever waits behind a running job."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _idle
        self._idle = 0
        self._tasks: SimpleQueue = SimpleQueue()

    def run(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._tasks.put((fn, args))
                return
        threading.Thread(target=self._serve, args=((fn, args),), name="cachequeue-handler",
                         daemon=True).start()

    def _serve(self, task: tuple | None) -> None:
        while task is not None:
            fn, args = task
            fn(*args)
            with self._lock:
                self._idle += 1
            task = self._tasks.get()

    def close(self) -> None:
        """Let the waiting threads end (running ones end after their job)."""
        with self._lock:
            idle, self._idle = self._idle, 0
        for _ in range(idle):
            self._tasks.put(None)


class LeaseLostBeforeStart(RuntimeError):
    """A job waited in the local queue until its lease was lost or ran out: not started."""


class _Pullers:
    """The throughput mode's handler threads: each takes the next job from the local queue
    itself and runs it, one after another (no hand-over by the loop per job)."""

    def __init__(self, run: Callable[[_Running, Callable[..., Any], tuple], None]) -> None:
        self.local: SimpleQueue = SimpleQueue()  # (running, handler, args); None ends a thread
        self._run = run
        self._threads = 0

    def put(self, running: _Running, handler: Callable[..., Any], args: tuple,
            threads: int) -> None:
        if self._threads < threads:
            self._threads += 1
            threading.Thread(target=self._pull, name="cachequeue-handler", daemon=True).start()
        self.local.put((running, handler, args))

    def _pull(self) -> None:
        get, run = self.local.get, self._run
        while (task := get()) is not None:
            run(*task)

    def take_all(self) -> list[_Running]:
        """Empty the local queue (the jobs no thread has taken yet)."""
        taken = []
        while True:
            try:
                task = self.local.get_nowait()
            except Empty:
                return taken
            if task is None:  # close() ran already: keep the sentinel for a thread
                self.local.put(None)
                return taken
            taken.append(task[0])

    def close(self) -> None:
        self.take_all()
        for _ in range(self._threads):
            self.local.put(None)
        self._threads = 0


class _Sender:
    """The throughput mode's completion sender: one thread, one connection of its own, one
    batch at a time. Only this thread touches its connection."""

    def __init__(self, connect: Callable[[], psycopg.Connection], poke: Callable[[], None]) -> None:
        self._connect, self._poke = connect, poke
        self._tasks: SimpleQueue = SimpleQueue()
        self.done: deque = deque()  # (batch, list of bools or the exception raised)
        self.answered = threading.Event()
        self.batch: list | None = None  # the batch in flight
        self._thread: threading.Thread | None = None

    def send(self, batch: list) -> None:
        self.batch = batch
        self.answered.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="cachequeue-completions",
                                            daemon=True)
            self._thread.start()
        self._tasks.put(batch)

    def _serve(self) -> None:
        conn = None
        while (batch := self._tasks.get()) is not None:
            try:
                if conn is None:
                    conn = self._connect()
                outcome: Any = jobs.finish_many(conn, batch)
            except BaseException as exc:  # handed to the loop, which decides
                outcome = exc
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()
                    conn = None
            self.done.append((batch, outcome))
            self.answered.set()
            self._poke()
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        if self._thread is not None:
            self._tasks.put(None)
            self._thread = None


class InFlight:
    """The held jobs of worker `name`; `stats`, `log(event, **fields)` and `log_each(lines)`
    (several (event, job, attempt) lines at once; by default `log` for each) are the worker's."""

    def __init__(self, name: str, connect: Callable[[], psycopg.Connection],
                 handlers: Mapping[str, Callable[..., Any]], *, poke: Callable[[], None],
                 log: Callable[..., None], stats: Counter, policy: RetryPolicy | None,
                 log_each: Callable[[list[tuple[str, int, int]]], None] | None = None,
                 rng: random.Random, lease: float, batch: int = 1,
                 batch_wait: float = 0.0, prefetch: int = 0, concurrency: int = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._name, self._connect, self._handlers = name, connect, dict(handlers)
        self._with_ctx = {kind: takes_context(h) for kind, h in self._handlers.items()}
        self._poke, self._log, self._stats = poke, log, stats
        # (event, job, attempt) lines of one statement's answer, in order (logline.info_each)
        self._log_each = log_each or (lambda lines: [log(e, job=j, attempt=a) for e, j, a in lines])
        self._policy, self._rng = policy, rng
        self._lease, self._batch_size, self._batch_wait = lease, batch, batch_wait
        self._held: dict[uuid.UUID, _Running] = {}
        self._results: deque[tuple[jobs.Claim, Result]] = deque()
        self._batch: list[tuple[jobs.Claim, Any]] = []  # successes waiting for the flush
        self._batch_jobs: set[int] = set()  # their job ids (one row per job in finish_many)
        self._batch_since: float | None = None  # when the oldest of them joined
        self._recording: list[uuid.UUID] = []  # the tokens of the report in flight
        self._threads = _Threads()
        self._prefetch, self._concurrency, self._clock = prefetch, concurrency, clock
        self._pullers = _Pullers(self._run_waiting) if prefetch else None
        self._unreleased: list[_Running] = []  # taken from the local queue, not handed back yet
        self._sender = _Sender(connect, poke) if prefetch and batch > 1 else None
        self._wake_pending = False  # a result poked the loop this turn (see _wake)

    def __len__(self) -> int:
        """Jobs held: running, or done and waiting in the batch (their leases are ours)."""
        return len(self._held)

    @property
    def running(self) -> int:
        """Jobs whose handler has not been reported yet: the slots in use (in the throughput
        mode, the jobs waiting in the local queue too)."""
        sending = len(self._sender.batch) if self._sender and self._sender.batch else 0
        return len(self._held) - len(self._batch) - sending

    @property
    def reports_waiting(self) -> bool:
        """A turn has reports to take: results (unless they wait behind a full batch for the
        sender's answer, which pokes the loop), or the sender's answer."""
        return ((bool(self._results) and not self._held_back())
                or bool(self._sender and self._sender.done))

    def _held_back(self) -> bool:
        """Throughput mode: the batch is full and the sender still busy with the one before.
        The results after it wait in their queue (their slots stay taken) and the loop goes
        on claiming, instead of blocking until the answer comes back."""
        return (self._sender is not None and self._sender.batch is not None
                and not self._sender.done and len(self._batch) >= self._batch_size)

    @property
    def batched(self) -> int:
        """Successes waiting for the next flush."""
        return len(self._batch)

    def flush_due_at(self) -> float | None:
        """When the batch must be flushed at the latest (clock of the worker), or None: also
        None while the sender is busy (throughput mode), since a due batch waits for its
        answer anyway and the answer wakes the loop (a due time in the past would make the
        loop's wait return at once, turn after turn, until then)."""
        if self._batch_since is None:
            return None
        if self._sender is not None and self._sender.batch is not None and not self._sender.done:
            return None
        return self._batch_since + self._batch_wait

    def start(self, claim: jobs.Claim, now: float) -> None:
        """Run the claim's handler on a handler thread (claimed at `now`)."""
        ctx = JobContext(claim, self._name, self._connect)
        self._held[claim.lease_token] = _Running(claim, ctx, expires=now + self._lease)
        self._stats["claimed"] += 1
        if self._pullers is None:  # the throughput mode writes one line per claim (Worker._claim)
            self._log("claimed", job=claim.job_id, attempt=claim.attempt, kind=claim.kind)
        args = (claim.payload, ctx) if self._with_ctx[claim.kind] else (claim.payload,)
        if self._pullers is not None:
            self._pullers.put(self._held[claim.lease_token], self._handlers[claim.kind], args,
                              self._concurrency)
            return
        self._threads.run(self._run, claim, self._handlers[claim.kind], args)

    def _run_waiting(self, running: _Running, handler: Callable[..., Any], args: tuple) -> None:
        """A handler thread of the throughput mode took a job from the local queue."""
        if running.ctx.should_stop() or running.expires <= self._clock():
            # Lost (the heartbeat found it gone, or a hand-back) or ran out while waiting:
            # not started. The loop hands it back (_release_unstarted); refused if another
            # attempt holds it.
            self._results.append((running.claim, Result(error=LeaseLostBeforeStart(
                "the lease was lost or ran out while the job waited in the local queue"))))
            self._wake()
            return
        self._run(running.claim, handler, args)

    def _run(self, claim: jobs.Claim, handler: Callable[..., Any], args: tuple) -> None:
        try:
            result = execute(handler, *args)
        except BaseException as exc:  # SystemExit or KeyboardInterrupt raised by a handler
            result = Result(error=exc)
        self._results.append((claim, result))
        self._wake()

    def _wake(self) -> None:
        """Poke the loop, once per turn: the first result since the turn began pokes it;
        later ones find `_wake_pending` set and send nothing (the loop takes every result
        that arrived before its next look, and looks again before it sleeps)."""
        if not self._wake_pending:
            self._wake_pending = True
            self._poke()

    def woken(self) -> None:
        """The loop begins a turn: the next result must poke it again."""
        self._wake_pending = False

    # ------------------------------------------------------------------ reporting

    def report(self, conn: psycopg.Connection, now: float, *, flush: bool = False) -> int:
        """Take every finished handler's result: fail at once, finish at once (batch 1) or
        add to the batch; flush the batch when it is full, due at `now`, or `flush` says
        so. Return the slots freed. A result stays queued until its report went through,
        across a lost connection."""
        freed = 0
        self._collect(conn, wait=False)
        while self._results:
            if len(self._batch) >= self._batch_size:  # full: out before another row joins
                if not flush and self._held_back():
                    break  # the sender's answer pokes the loop; this turn claims meanwhile
                self._flush_batch(conn, full=True)
            claim, result = self._results[0]
            running = self._held.get(claim.lease_token)
            if running is not None:  # else: handed back or abandoned meanwhile
                if isinstance(result.error, LeaseLostBeforeStart):
                    self._release_unstarted(conn, running, str(result.error))
                elif not (self._batch_size > 1 and result.error is None
                          and self._joins(conn, running, result, now)):
                    self._report_one(conn, running, result)
                freed += 1
            self._results.popleft()
        if len(self._batch) >= self._batch_size and (flush or not self._held_back()):
            self._flush_batch(conn, full=True)
        if self._batch and flush:
            self.flush(conn)
        elif self._batch and now >= self._batch_since + self._batch_wait:
            self._flush_batch(conn, full=False)
        return freed

    def _flush_batch(self, conn: psycopg.Connection, *, full: bool) -> None:
        """Write the batch: on the loop's connection, or (throughput mode) hand it to the
        sender; a `full` batch waits for the one in flight, a due one for the next turn."""
        if self._sender is None:
            self.flush(conn)
        elif self._sender.batch is None:
            self._send()
        elif full:
            self._collect(conn, wait=True)  # one batch in flight at a time
            self._send()

    def _send(self) -> None:
        """Hand the batch to the sender (throughput mode); its rows stay held until the answer."""
        batch = list(self._batch)
        self._batch.clear()
        self._batch_jobs.clear()
        self._batch_since = None
        self._sender.send(batch)

    def _collect(self, conn: psycopg.Connection, *, wait: bool) -> None:
        """Take the sender's answer (waiting for it if `wait` and a batch is in flight): log
        each row as finish_many decided. A lost answer: the rows are sent again here, on
        the loop's connection, by flush(), which recognises rows that did commit."""
        sender = self._sender
        if sender is None or sender.batch is None:
            return
        if wait:
            sender.answered.wait()
        if not sender.done:
            return
        batch, outcome = sender.done.popleft()
        sender.batch = None
        self._stats["statements"] += 1
        if isinstance(outcome, BaseException):
            if not isinstance(outcome, CONNECTION_ERRORS):
                raise outcome
            self._stats["disconnects"] += 1
            pending = [(c, o) for c, o in batch if c.lease_token in self._held]
            for claim, _ in pending:
                self._held[claim.lease_token].unsure = True
            saved = (self._batch, self._batch_jobs, self._batch_since)
            self._batch, self._batch_jobs = pending, {c.job_id for c, _ in pending}
            try:
                self.flush(conn)
            finally:
                self._batch, self._batch_jobs, self._batch_since = saved
            return
        self._stats["batches"] += 1
        lines = []
        for (claim, _), ok in zip(batch, outcome, strict=True):
            if claim.lease_token not in self._held:  # abandoned meanwhile
                continue
            del self._held[claim.lease_token]
            event = "finished" if ok else "rejected"
            self._stats[event] += 1
            lines.append((event, claim.job_id, claim.attempt))
        self._log_each(lines)

    def _joins(self, conn: psycopg.Connection, running: _Running, result: Result,
               now: float) -> bool:
        """Add a success to the batch, unless its output cannot be stored (then it is
        reported alone, and failed for good, by single_pass.record) or its lease may run
        out before the flush: then it is reported alone at once, before this turn's claim
        can take the job over, as it would be without batching."""
        claim = running.claim
        if running.expires - now <= self._batch_wait:
            return False
        try:
            to_json(result.output, "output")
        except InvalidJob:
            return False
        if claim.job_id in self._batch_jobs:
            self.flush(conn)  # an older attempt of the same job: one row per job and statement
        if not self._batch:  # one line per batch: the moment a supervisor (chaos) can act on
            self._batch_since = now
            self._log("batching", job=claim.job_id, attempt=claim.attempt,
                      flush_in=self._batch_wait)
        self._batch.append((claim, result.output))
        self._batch_jobs.add(claim.job_id)
        return True

    def _report_one(self, conn: psycopg.Connection, running: _Running, result: Result) -> None:
        claim = running.claim
        self._recording = [claim.lease_token]
        outcome = record(conn, claim, result, policy=self._policy, rng=self._rng)
        self._stats["statements"] += 1
        if outcome == "lost" and running.unsure:
            outcome = self._settled(conn, claim) or outcome
        self._recording = []
        del self._held[claim.lease_token]
        event = _EVENTS[outcome]
        self._stats[event] += 1
        fields = {"job": claim.job_id, "attempt": claim.attempt}
        if result.error is not None:
            fields["error"] = one_line(result.error)
        self._log(event, **fields)

    def _release_unstarted(self, conn: psycopg.Connection, running: _Running,
                           reason: str) -> None:
        """A job of the local queue that was never started (its lease was lost or ran out
        while it waited): hand it back, fenced by its token; a hand-back, not a failure."""
        claim = running.claim
        self._recording = [claim.lease_token]
        state = jobs.release(conn, claim, reason)
        self._stats["statements"] += 1
        if state is None and running.unsure:  # an earlier try's answer was lost: did it commit?
            state = self._released(conn, claim)
        self._recording = []
        del self._held[claim.lease_token]
        event = "handed-back" if state else "rejected"
        self._stats["released" if state else "rejected"] += 1
        self._log(event, job=claim.job_id, attempt=claim.attempt)

    def _released(self, conn: psycopg.Connection, claim: jobs.Claim) -> str | None:
        self._stats["statements"] += 1
        for row in jobs.history(conn, claim.job_id):
            if row["lease_token"] == claim.lease_token and row["outcome"] == "released":
                return "released"
        return None

    def flush(self, conn: psycopg.Connection) -> None:
        """Finish every batched result in one statement; each row stands on its own lease
        (after the answer to the batch in flight, in the throughput mode)."""
        self._collect(conn, wait=True)
        if not self._batch:
            return
        self._recording = [claim.lease_token for claim, _ in self._batch]
        finished = jobs.finish_many(conn, self._batch)
        self._stats["statements"] += 1
        self._stats["batches"] += 1
        unsure = [claim for (claim, _), ok in zip(self._batch, finished, strict=True)
                  if not ok and self._held[claim.lease_token].unsure]
        settled = self._settled_many(conn, unsure) if unsure else {}
        lines = []
        for (claim, _), ok in zip(self._batch, finished, strict=True):
            if not ok and settled.get(claim.lease_token) == "done":
                ok = True  # the earlier flush did commit this row before the connection dropped
            del self._held[claim.lease_token]
            event = "finished" if ok else "rejected"
            self._stats[event] += 1
            lines.append((event, claim.job_id, claim.attempt))
        self._log_each(lines)
        self._recording = []
        self._batch.clear()
        self._batch_jobs.clear()
        self._batch_since = None

    def _settled(self, conn: psycopg.Connection, claim: jobs.Claim) -> str | None:
        """After a report whose answer was lost with the connection: what it did, if it did."""
        return self._settled_many(conn, [claim]).get(claim.lease_token)

    def _settled_many(self, conn: psycopg.Connection,
                      claims: list[jobs.Claim]) -> dict[uuid.UUID, str]:
        """{lease token: new state} of the attempts among `claims` that did end (history)."""
        tokens = {claim.lease_token for claim in claims}
        settled = {}
        for job_id in sorted({claim.job_id for claim in claims}):
            self._stats["statements"] += 1
            for row in jobs.history(conn, job_id):
                if row["lease_token"] in tokens and row["outcome"] in _SETTLED:
                    settled[row["lease_token"]] = _SETTLED[row["outcome"]]
        return settled

    def connection_lost(self) -> None:
        """The connection dropped: a report in flight may or may not have committed."""
        for token in self._recording:
            if token in self._held:
                self._held[token].unsure = True
        self._recording = []

    # ------------------------------------------------------------------ leases and hand-back

    def to_renew(self) -> list[jobs.Claim]:
        """The claims whose leases the heartbeat should renew (not lost, not handed back),
        batched results included: they hold their leases until the flush."""
        return [r.claim for r in self._held.values() if not r.ctx.should_stop()]

    def renewed(self, claims: Iterable[jobs.Claim], held: set[uuid.UUID], now: float) -> None:
        """After a heartbeat at `now`: the renewed leases run until now + lease; tell each
        handler whose lease was not renewed that it is lost."""
        for claim in claims:
            running = self._held.get(claim.lease_token)
            if running is not None and claim.lease_token in held:
                running.expires = now + self._lease
            elif running is not None:
                running.ctx.halt(LOST)
                self._stats["lost"] += 1
                self._log("lost", job=claim.job_id, attempt=claim.attempt)

    def hand_back_waiting(self, conn: psycopg.Connection, reason: str) -> int:
        """Throughput mode: give the jobs no thread has started yet back to the queue at once,
        in one statement (each row fenced by its own lease token); return how many."""
        if self._pullers is None:
            return 0
        # Taken out of the local queue before the statement: if it fails (a lost
        # connection), the next call sends them again; no thread starts them meanwhile.
        waiting = self._unreleased = self._unreleased + self._pullers.take_all()
        if not waiting:
            return 0
        for running in waiting:
            running.ctx.halt(HANDED_BACK)
        released = prefetch.release_many(conn, [r.claim for r in waiting], reason)
        self._stats["statements"] += 1
        self._unreleased = []
        for running in waiting:
            claim = running.claim
            del self._held[claim.lease_token]
            ok = claim.lease_token in released
            self._stats["released" if ok else "lost"] += 1
            self._log("handed-back" if ok else "lost", job=claim.job_id, attempt=claim.attempt)
        return len(waiting)

    def hand_back(self, conn: psycopg.Connection, reason: str) -> None:
        """Flush the batch (those jobs are done), then give every job whose handler still
        runs back to the queue (jobs.release), one by one, by its token (the jobs still in
        the local queue of the throughput mode first, in one statement)."""
        self.flush(conn)
        self.hand_back_waiting(conn, reason)
        for token, running in list(self._held.items()):
            running.ctx.halt(HANDED_BACK)
            released = jobs.release(conn, running.claim, reason)
            self._stats["statements"] += 1
            del self._held[token]
            self._stats["released" if released else "lost"] += 1
            self._log("handed-back" if released else "lost", job=running.claim.job_id,
                      attempt=running.claim.attempt)
        self._results.clear()

    def abandon(self) -> None:
        """Hand-back is due but the database is unreachable: leave the jobs to lease expiry
        (batched results too: only their acknowledgements are lost)."""
        if self._pullers is not None:
            self._pullers.take_all()  # not to be started now
        self._unreleased = []
        if self._sender is not None:  # its answer, if it comes, finds nothing held
            self._sender.batch = None
            self._sender.done.clear()
        for running in self._held.values():
            running.ctx.halt(HANDED_BACK)
            self._stats["abandoned"] += 1
            self._log("abandoned", job=running.claim.job_id, attempt=running.claim.attempt)
        self._held.clear()
        self._results.clear()
        self._batch.clear()
        self._batch_jobs.clear()
        self._batch_since = None

    def close(self) -> None:
        """The worker stopped: let the idle handler threads end."""
        self._threads.close()
        if self._pullers is not None:
            self._pullers.close()
        if self._sender is not None:
            self._sender.close()
