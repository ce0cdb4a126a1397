"""The chapter's job queue as an in-memory state machine with an explicit clock."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

from ...checks import (
    check_bool,
    check_callable,
    check_finite,
    check_instance,
    check_int,
    check_seconds,
    check_text,
)
from ...clock import ManualClock
from ...errors import UnknownKind

# The model accepts exactly what cachequeue.queue.jobs accepts: it shares its checks.
from ...queue.limits import (
    MAX_HANDBACKS,
    check_kinds,
    check_lease,
    check_when,
    error_text,
    payload_json,
    to_json,
)
from ...queue.retry import RetryPolicy

__all__ = ["KINDS", "STATES", "ManualClock", "ModelClaim", "ModelJob", "QueueModel"]

STATES = ("pending", "running", "done", "failed", "cancelled")
KINDS = frozenset({"summarise", "noop", "flaky", "always_fail"})  # the rows of job_kinds


@dataclass(frozen=True)
class ModelClaim:
    """One attempt at one job, as `jobs.Claim`; `locked_until` is a clock reading."""

    job_id: int
    tenant_id: int
    kind: str
    payload: dict
    attempt: int
    lease_token: uuid.UUID
    locked_until: float
    worker: str | None


@dataclass(frozen=True)
class ModelJob:
    """A snapshot of one job row plus its result (`output`); times are clock readings."""

    job_id: int
    tenant_id: int
    kind: str
    payload: dict
    state: str
    attempts: int
    handbacks: int
    max_attempts: int
    last_error: str | None
    output: Any | None
    run_after: float
    deadline: float | None
    created_at: float
    finished_at: float | None
    lease_token: uuid.UUID | None
    locked_until: float | None
    locked_by: str | None


def _used(row: dict[str, Any]) -> int:
    """The attempts a job has used up: every claim but those a stopping worker handed back."""
    return row["attempts"] - row["handbacks"]


class QueueModel:
    """The rules of `cachequeue.queue.jobs` without a database, on an explicit clock.

    Each method mirrors the SQL statement of the same name in `sql/queries.sql`: same
    transitions, same return values, same validation. `clock` is a `ManualClock` (or any
    callable returning seconds), so a test jumps past a lease instead of waiting for it.
    Callers only get copies (claims, snapshots, results): mutating them changes nothing.
    Lease tokens are UUID(int=1), UUID(int=2), ... so runs repeat exactly.
    """

    def __init__(self, clock: Callable[[], float] | None = None, *,
                 kinds: Iterable[str] = KINDS) -> None:
        if clock is not None:
            check_callable(clock, "clock", "callable like time.monotonic")
        self.clock = clock if clock is not None else ManualClock()
        self.kinds = frozenset(kinds)
        self._rows: dict[int, dict[str, Any]] = {}
        self._results: dict[int, Any] = {}
        self._attempts: list[dict[str, Any]] = []
        self._audit: list[dict[str, Any]] = []
        self._keys: dict[tuple[int, str], int] = {}
        self._ids = 0  # like an identity column, a conflicting insert still uses up an id
        self._tokens = 0

    def _now(self) -> float:
        return check_finite(self.clock(), "clock()")

    def _owned(self, claim: ModelClaim, now: float) -> dict[str, Any] | None:
        """The job if `claim` still holds an unexpired lease on it (same token, running)."""
        check_instance(claim, "claim (from QueueModel.claim())", ModelClaim)
        row = self._rows.get(claim.job_id)
        if (row is None or row["state"] != "running" or row["lease_token"] != claim.lease_token
                or not row["locked_until"] > now):
            return None
        return row

    def _close(self, token: uuid.UUID, at: float, outcome: str, error: str | None) -> None:
        for attempt in self._attempts:
            if attempt["lease_token"] == token:
                attempt.update(finished_at=at, outcome=outcome, error=error)

    def _end(self, row: dict[str, Any], state: str, now: float) -> None:
        row.update(state=state, lease_token=None, locked_until=None, locked_by=None,
                   finished_at=now if state in ("done", "failed", "cancelled") else None)

    def _manual(self, tenant_id: int, job_id: int, actor: str, reason: str,
                states: tuple[str, ...]) -> dict[str, Any] | None:
        """Validate an operator's action; the job if it is this tenant's and in `states`."""
        check_int(tenant_id, "tenant_id"), check_int(job_id, "job_id")
        check_text(actor, "actor"), check_text(reason, "reason", limit=1000)
        row = self._rows.get(job_id)
        ok = row is not None and row["tenant_id"] == tenant_id and row["state"] in states
        return row if ok else None

    def _audited(self, row: dict[str, Any], actor: str, action: str, reason: str,
                 detail: dict[str, Any]) -> None:
        self._audit.append(dict(job_id=row["job_id"], tenant_id=row["tenant_id"], actor=actor,
                                action=action, reason=reason, at=self._now(), detail=detail))

    # ------------------------------------------------------------------ operations
    def submit(self, *, tenant_id: int, kind: str, payload: dict,
               idempotency_key: str | None = None, max_attempts: int = 3,
               run_after: float | None = None, deadline: float | None = None) -> int:
        """Store a pending job and return its id (`run_after`, `deadline`: seconds from now).

        The same (tenant, idempotency key) returns the first job's id. Bad input raises
        the errors `jobs.submit` raises, and stores nothing.
        """
        check_int(tenant_id, "tenant_id")
        check_text(kind, "kind")
        check_text(idempotency_key, "idempotency_key", optional=True)
        check_int(max_attempts, "max_attempts", minimum=1)
        text = payload_json(payload)
        for value, name in ((run_after, "run_after"), (deadline, "deadline")):
            if value is not None and not isinstance(value, int | float):
                raise TypeError(f"the model takes {name} in seconds from now, got {value!r}")
        delay = check_when(run_after, "run_after", positive=False)[1] or 0.0
        limit = check_when(deadline, "deadline", positive=True)[1]
        if kind not in self.kinds:
            raise UnknownKind(
                f"unknown job kind {kind!r}; known kinds are rows of job_kinds")
        self._ids += 1
        if idempotency_key is not None and (tenant_id, idempotency_key) in self._keys:
            return self._keys[(tenant_id, idempotency_key)]
        now = self._now()
        self._rows[self._ids] = dict(
            job_id=self._ids, tenant_id=tenant_id, kind=kind, payload=json.loads(text),
            state="pending", attempts=0, handbacks=0, max_attempts=max_attempts,
            last_error=None,
            run_after=now + delay, deadline=None if limit is None else now + limit,
            created_at=now, finished_at=None, lease_token=None, locked_until=None,
            locked_by=None)
        if idempotency_key is not None:
            self._keys[(tenant_id, idempotency_key)] = self._ids
        return self._ids

    def claim_many(self, limit: int, *, lease: float = 30.0, kinds: Iterable[str] | None = None,
                   worker: str | None = None) -> list[ModelClaim]:
        """Claim up to `limit` runnable jobs: expired leases with attempts left first (oldest
        expiry first), then due pending jobs (earliest run_after first). Expired leases with
        no attempts left become failed on the way (attempts handed back do not count).
        [] means "nothing claimable now"."""
        limit, lease = check_int(limit, "limit", minimum=1), check_lease(lease)
        wanted, worker = check_kinds(kinds), check_text(worker, "worker", optional=True)
        now = self._now()
        rows = sorted(self._rows.values(), key=lambda r: r["job_id"])
        for row in rows:  # every kind: nobody may run these again
            if row["state"] == "running" and row["locked_until"] <= now \
                    and _used(row) >= row["max_attempts"]:
                self._close(row["lease_token"], row["locked_until"], "expired", "lease expired")
                self._end(row, "failed", now)
                row["last_error"] = (f"lease expired on the last attempt ({_used(row)} of "
                                     f"{row['max_attempts']})")
        rows = [r for r in rows if wanted is None or r["kind"] in wanted]
        expired = sorted((r for r in rows if r["state"] == "running" and r["locked_until"] <= now
                          and _used(r) < r["max_attempts"]),
                         key=lambda r: (r["locked_until"], r["job_id"]))
        fresh = sorted((r for r in rows if r["state"] == "pending" and r["run_after"] <= now),
                       key=lambda r: (r["run_after"], r["job_id"]))
        picked = (expired + fresh)[:limit]
        for row in picked:
            if row["state"] == "running":
                self._close(row["lease_token"], row["locked_until"], "expired", "lease expired")
            self._tokens += 1
            row.update(state="running", attempts=row["attempts"] + 1, locked_by=worker,
                       lease_token=uuid.UUID(int=self._tokens), locked_until=now + lease)
            self._attempts.append(dict(
                job_id=row["job_id"], attempt=row["attempts"], lease_token=row["lease_token"],
                worker=worker, started_at=now, finished_at=None, outcome=None, error=None))
        return [ModelClaim(r["job_id"], r["tenant_id"], r["kind"], copy.deepcopy(r["payload"]),
                           r["attempts"], r["lease_token"], r["locked_until"], worker)
                for r in sorted(picked, key=lambda r: r["job_id"])]

    def claim(self, *, lease: float = 30.0, kinds: Iterable[str] | None = None,
              worker: str | None = None) -> ModelClaim | None:
        """Claim one runnable job (see claim_many), or None when nothing is claimable now."""
        claims = self.claim_many(1, lease=lease, kinds=kinds, worker=worker)
        return claims[0] if claims else None

    def heartbeat(self, claim: ModelClaim, lease: float = 30.0) -> bool:
        """Extend a lease that is still held and unexpired; False once it was lost."""
        lease, now = check_lease(lease), self._now()
        row = self._owned(claim, now)
        if row is not None:
            row["locked_until"] = now + lease
        return row is not None

    def finish(self, claim: ModelClaim, output: Any) -> bool:
        """Store `output` once per job and mark it done, if `claim` still holds the lease."""
        now = self._now()
        row, text = self._owned(claim, now), to_json(output, "output")
        if row is None:
            return False
        self._results.setdefault(row["job_id"], json.loads(text))
        self._close(claim.lease_token, now, "done", None)
        self._end(row, "done", now)
        return True

    def fail(self, claim: ModelClaim, error: BaseException | str, *, permanent: bool = False,
             policy: RetryPolicy | None = None, rng: Any = None,
             delay: float | None = None) -> str | None:
        """Record the error; return 'pending' (retry after the backoff) or 'failed', or None
        when the lease was lost. The backoff is `delay` seconds if given, else
        `policy.delay(attempt, rng)` with `policy` defaulting to RetryPolicy(). A policy given
        explicitly also caps attempts and the deadline, as in jobs.fail."""
        now = self._now()
        row = self._owned(claim, now)
        if delay is not None and policy is not None:
            raise ValueError("give either delay or policy, not both")
        limits = policy  # only an explicit policy adds its own caps
        if delay is None:
            policy = RetryPolicy() if policy is None else policy
            check_instance(policy, "policy", RetryPolicy)
        else:
            delay = check_seconds(delay, "delay", allow_zero=True)
        check_bool(permanent, "permanent")
        text = error_text(error)
        # Drawn even when the lease is lost, as jobs.fail does, so seeded rngs stay in step.
        wait = float(delay) if delay is not None else policy.delay(
            check_int(claim.attempt, "claim.attempt", minimum=1), rng)
        if row is None:
            return None
        cap, deadlines = row["max_attempts"], [row["deadline"]]
        if limits is not None:
            cap = min(cap, limits.max_attempts)
            if limits.deadline is not None:
                deadlines.append(row["created_at"] + limits.deadline)
        deadlines = [x for x in deadlines if x is not None]  # SQL least() ignores NULLs
        next_run = now + wait
        give_up = permanent or _used(row) >= cap or (deadlines and next_run > min(deadlines))
        self._close(claim.lease_token, now, "failed" if give_up else "retry", text)
        self._end(row, "failed" if give_up else "pending", now)
        row["last_error"] = text
        if not give_up:
            row["run_after"] = next_run
        return row["state"]

    def release(self, claim: ModelClaim, reason: str) -> str | None:
        """Hand a held job back (a worker stopping): 'pending' at once, the attempt closed
        'released' and not counted (handbacks + 1); 'failed' on hand-back number
        MAX_HANDBACKS; None when the lease was lost. As jobs.release."""
        now = self._now()
        row = self._owned(claim, now)
        check_text(reason, "reason", limit=1000)
        if row is None:
            return None
        handbacks = row["handbacks"] + 1
        give_up = handbacks >= MAX_HANDBACKS
        self._close(claim.lease_token, now, "released", reason)
        self._end(row, "failed" if give_up else "pending", now)
        row["handbacks"] = handbacks
        if give_up:
            row["last_error"] = (f"handed back {handbacks} times, the most allowed: the handler "
                                 f"may outlive the workers' shutdown timeout (last: {reason})")
        else:
            row["run_after"] = now
        return row["state"]

    def cancel(self, *, tenant_id: int, job_id: int, actor: str, reason: str) -> bool:
        """Cancel a pending or running job of this tenant (audited); False for anything else."""
        row = self._manual(tenant_id, job_id, actor, reason, ("pending", "running"))
        if row is None:
            return False
        self._audited(row, actor, "cancel", reason,
                      {"previous_state": row["state"], "attempts": row["attempts"]})
        if row["lease_token"] is not None:
            self._close(row["lease_token"], self._now(), "cancelled", reason)
        self._end(row, "cancelled", self._now())
        return True

    def retry(self, *, tenant_id: int, job_id: int, actor: str, reason: str,
              attempts: int | None = None) -> bool:
        """Put a failed job of this tenant back to pending with more attempts (audited).

        The job id stays; attempt numbers continue. The job gets `attempts` more tries,
        by default as many as it was submitted with, and its hand-backs count from 0 again.
        False unless this tenant's and failed.
        """
        if attempts is not None:
            check_int(attempts, "attempts", minimum=1)
        row = self._manual(tenant_id, job_id, actor, reason, ("failed",))
        if row is None:
            return False
        first = [a["detail"]["added_attempts"] for a in self._audit
                 if a["job_id"] == job_id and a["action"] == "retry"]
        added = attempts or (first[0] if first else row["max_attempts"])
        self._audited(row, actor, "retry", reason, {
            "previous_attempts": row["attempts"], "previous_max_attempts": row["max_attempts"],
            "added_attempts": added, "last_error": row["last_error"]})
        row.update(state="pending", max_attempts=row["attempts"] + added, handbacks=0,
                   run_after=self._now(), finished_at=None)
        return True

    # ------------------------------------------------------------------ reading
    def job(self, job_id: int) -> ModelJob:
        """A snapshot of one job with its result (KeyError if there is no such job)."""
        row = self._rows[job_id] | {"output": self._results.get(job_id)}
        return ModelJob(**{f.name: copy.deepcopy(row[f.name]) for f in fields(ModelJob)})

    def status(self, *, tenant_id: int, job_id: int) -> ModelJob | None:
        """Like `jobs.status`: None for a missing job and for another tenant's job alike."""
        check_int(tenant_id, "tenant_id"), check_int(job_id, "job_id")
        row = self._rows.get(job_id)
        return None if row is None or row["tenant_id"] != tenant_id else self.job(job_id)

    def jobs(self) -> list[ModelJob]:
        """Snapshots of every job, in id order."""
        return [self.job(job_id) for job_id in sorted(self._rows)]

    def results(self) -> dict[int, Any]:
        """A copy of the result rows {job_id: output}: only jobs that finished have one."""
        return copy.deepcopy(self._results)

    def history(self, job_id: int | None = None) -> list[dict[str, Any]]:
        """Copies of the attempt rows, by job and attempt (as `jobs.history`)."""
        rows = [a for a in self._attempts if job_id is None or a["job_id"] == job_id]
        return copy.deepcopy(sorted(rows, key=lambda a: (a["job_id"], a["attempt"])))

    def audit(self, job_id: int | None = None) -> list[dict[str, Any]]:
        """Copies of the audit rows (cancel, retry), oldest first (as `jobs.audit`)."""
        return copy.deepcopy([a for a in self._audit if job_id is None or a["job_id"] == job_id])
