"""The jobs a worker holds right now: their handler threads, their results, their hand-back.

`InFlight` belongs to one `runner.Worker` and is only touched by its loop thread, except
for two thread-safe steps: a handler thread appends its result to a deque and pokes the
loop awake. Each held job is keyed by its lease token (one worker may briefly hold two
attempts of one job: the old one lost, the new one claimed). Reports go through
`worker.record`; every database call takes the loop's connection, counts one statement in
the worker's stats and writes one log line per outcome.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from . import jobs
from .context import HANDED_BACK, LOST, JobContext, takes_context
from .notify import one_line
from .retry import RetryPolicy
from .worker import Result, execute, record

__all__ = ["InFlight"]

# How a report ended, as the log and the stats name it (worker.record's outcome -> event).
_EVENTS = {"done": "finished", "pending": "retrying", "failed": "failed", "lost": "rejected"}


@dataclass
class _Running:
    claim: jobs.Claim
    ctx: JobContext
    unsure: bool = False  # a report was sent but the connection dropped before the answer


class InFlight:
    """The held jobs of worker `name`; `stats` and `log(event, **fields)` are the worker's."""

    def __init__(self, name: str, connect: Callable[[], psycopg.Connection],
                 handlers: Mapping[str, Callable[..., Any]], *, poke: Callable[[], None],
                 log: Callable[..., None], stats: Counter, policy: RetryPolicy | None,
                 rng: random.Random) -> None:
        self._name, self._connect, self._handlers = name, connect, dict(handlers)
        self._with_ctx = {kind: takes_context(h) for kind, h in self._handlers.items()}
        self._poke, self._log, self._stats = poke, log, stats
        self._policy, self._rng = policy, rng
        self._held: dict[uuid.UUID, _Running] = {}
        self._results: deque[tuple[jobs.Claim, Result]] = deque()
        self._recording: uuid.UUID | None = None

    def __len__(self) -> int:
        return len(self._held)

    @property
    def reports_waiting(self) -> bool:
        return bool(self._results)

    def start(self, claim: jobs.Claim) -> None:
        """Run the claim's handler in a new daemon thread."""
        ctx = JobContext(claim, self._name, self._connect)
        self._held[claim.lease_token] = _Running(claim, ctx)
        self._stats["claimed"] += 1
        self._log("claimed", job=claim.job_id, attempt=claim.attempt, kind=claim.kind)
        args = (claim.payload, ctx) if self._with_ctx[claim.kind] else (claim.payload,)
        threading.Thread(target=self._run, args=(claim, self._handlers[claim.kind], args),
                         name=f"cachequeue-job-{claim.job_id}", daemon=True).start()

    def _run(self, claim: jobs.Claim, handler: Callable[..., Any], args: tuple) -> None:
        try:
            result = execute(handler, *args)
        except BaseException as exc:  # SystemExit or KeyboardInterrupt raised by a handler
            result = Result(error=exc)
        self._results.append((claim, result))
        self._poke()

    def report(self, conn: psycopg.Connection) -> int:
        """Report every finished handler's result (finish or fail); return the slots freed.
        A result stays queued until its report went through, across a lost connection."""
        freed = 0
        while self._results:
            claim, result = self._results[0]
            running = self._held.get(claim.lease_token)
            if running is not None:  # else: handed back or abandoned meanwhile
                self._recording = claim.lease_token
                outcome = record(conn, claim, result, policy=self._policy, rng=self._rng)
                self._stats["statements"] += 1
                if outcome == "lost" and running.unsure:
                    outcome = self._settled(conn, claim) or outcome
                self._recording = None
                del self._held[claim.lease_token]
                freed += 1
                event = _EVENTS[outcome]
                self._stats[event] += 1
                fields = {"job": claim.job_id, "attempt": claim.attempt}
                if result.error is not None:
                    fields["error"] = one_line(result.error)
                self._log(event, **fields)
            self._results.popleft()
        return freed

    def _settled(self, conn: psycopg.Connection, claim: jobs.Claim) -> str | None:
        """After a report whose answer was lost with the connection: what it did, if it did."""
        self._stats["statements"] += 1
        for row in jobs.history(conn, claim.job_id):
            if row["lease_token"] == claim.lease_token:
                return {"done": "done", "retry": "pending", "failed": "failed"}.get(row["outcome"])
        return None

    def connection_lost(self) -> None:
        """The connection dropped: a report in flight may or may not have committed."""
        if self._recording is not None and self._recording in self._held:
            self._held[self._recording].unsure = True
        self._recording = None

    def to_renew(self) -> list[jobs.Claim]:
        """The claims whose leases the heartbeat should renew (not lost, not handed back)."""
        return [r.claim for r in self._held.values() if not r.ctx.should_stop()]

    def renewed(self, claims: Iterable[jobs.Claim], held: set[uuid.UUID]) -> None:
        """After a heartbeat: tell each handler whose lease was not renewed that it is lost."""
        for claim in claims:
            running = self._held.get(claim.lease_token)
            if running is not None and claim.lease_token not in held:
                running.ctx.halt(LOST)
                self._stats["lost"] += 1
                self._log("lost", job=claim.job_id, attempt=claim.attempt)

    def hand_back(self, conn: psycopg.Connection, reason: str) -> None:
        """Give every held job back to the queue (jobs.release), one by one, by its token."""
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
        """Hand-back is due but the database is unreachable: leave the jobs to lease expiry."""
        for running in self._held.values():
            running.ctx.halt(HANDED_BACK)
            self._stats["abandoned"] += 1
            self._log("abandoned", job=running.claim.job_id, attempt=running.claim.attempt)
        self._held.clear()
        self._results.clear()
