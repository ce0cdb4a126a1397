"""The PostgreSQL job queue: submit, claim with a lease, finish, fail, cancel, retry, status.

Every function takes an autocommit connection from `db.connect(schema)` and runs ONE named
statement of `sql/queries.sql` (submit may need a second, read-only one; a claim made inside
the caller's own transaction adds two tiny ones): each call is one round trip and one short
transaction, and no transaction is open while a handler works.
Times come from the database clock `cq_now()`, so `db.set_clock` steps leases by hand.
Bad input raises before anything is written (`InvalidJob` and its subclasses, `ValueError`,
`TypeError`, `ForeignClaim`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from .. import sqlfile
from ..checks import check_bool, check_instance, check_int, check_text
from ..errors import ForeignClaim, InvalidJob, UnknownKind
from .limits import (
    MAX_ERROR_CHARS,
    MAX_HANDBACKS,
    MAX_LEASE,
    MAX_PAYLOAD_BYTES,
    MAX_RUN_AFTER,
    check_kinds,
    check_lease,
    check_run_after,
    check_when,
    error_text,
    payload_json,
    to_json,
)
from .retry import RetryPolicy

__all__ = [
    "MAX_ERROR_CHARS", "MAX_HANDBACKS", "MAX_KEY_CHARS", "MAX_LEASE", "MAX_PAYLOAD_BYTES",
    "MAX_PRIORITY", "PRIORITY_AGING", "Claim", "JobStatus", "Submitted", "audit", "cancel",
    "BATCH_PLAN", "claim", "claim_many", "fail", "finish", "finish_many", "finish_many_params",
    "heartbeat", "history", "query",
    "release", "retry", "status", "submission", "submit",
]


MAX_KEY_CHARS = 200  # characters of an idempotency key or a dedupe key
MAX_PRIORITY = 100  # priorities are 0 (the default) .. MAX_PRIORITY, higher claimed first
PRIORITY_AGING = 1.0  # seconds of waiting worth one priority level (job_rank in queue.sql)
_SUBMIT_TRIES = 3  # inserts tried when the active job holding a dedupe key keeps finishing

query = sqlfile.load(__package__, "queries.sql")
"""The named statements of `sql/queries.sql`: `query("claim").sql` to read, print or EXPLAIN.
Running one by hand bypasses the checks of the function that owns it."""


@dataclass(frozen=True)
class Claim:
    """One attempt at one job, held until `locked_until` (the lease) unless renewed.

    `lease_token` names this attempt; finish/fail/heartbeat succeed only while the job
    still carries it. `schema` is the schema the job was claimed in.
    """

    job_id: int
    tenant_id: int
    kind: str
    payload: dict
    attempt: int
    lease_token: uuid.UUID
    locked_until: datetime
    worker: str | None
    schema: str


@dataclass(frozen=True)
class JobStatus:
    """A job as the jobs table records it, with its result once done (`output`).

    `attempts` counts every claim (the number of the latest attempt); `handbacks` how many
    of them a stopping worker handed back (since submit or the last manual retry). Those do
    not count: the job fails when `attempts - handbacks` reaches `max_attempts`.
    """

    job_id: int
    kind: str
    state: str
    attempts: int
    handbacks: int
    max_attempts: int
    last_error: str | None
    output: Any | None
    run_after: datetime
    created_at: datetime
    finished_at: datetime | None


def _claim_params(conn: psycopg.Connection, claim: Claim) -> dict[str, Any]:
    check_instance(claim, "claim (from jobs.claim())", Claim)
    check_instance(claim.lease_token, "claim.lease_token", uuid.UUID)
    return {"job_id": check_int(claim.job_id, "claim.job_id"), "lease_token": claim.lease_token,
            "schema": claim.schema}


# Statements that join a batch (arrays unnested into rows) are planned at every call, never
# prepared: a prepared statement's generic plan cannot know how many rows the arrays hold,
# and for finish_many (its batch then three array parameters) it chose a nested loop of the
# held jobs against the batch: 1,000,000 comparisons for 1,000 rows, 145 ms instead of 16 ms
# (chapter 11, section 12.1: perf.generic_plan). Planning it costs ~0.5 ms a batch.
BATCH_PLAN = False


def _run_with_claim(conn: psycopg.Connection, name: str, claim: Claim, params: dict,
                    *, prepare: bool | None = None) -> tuple:
    """Run a statement that checks the lease; raise ForeignClaim if it ran in another schema.
    `prepare` as psycopg's (None: prepared once used often; BATCH_PLAN for batch statements)."""
    row = conn.execute(query(name).sql, params, prepare=prepare).fetchone()
    if row[-1] != claim.schema:
        raise ForeignClaim(
            f"this Claim was made in schema {claim.schema!r} but the connection uses "
            f"{row[-1]!r}; nothing was changed"
        )
    return row


@dataclass(frozen=True)
class Submitted:
    """What a submit did: `job_id` is the job the caller's work is in; `created` is False
    when no job was inserted because a key named an existing one, and `matched` says which
    key ('idempotency_key': the job that ever took it; 'dedupe_key': the job holding it now,
    pending or running), None when created."""

    job_id: int
    created: bool
    matched: str | None = None


def _key(value: object, name: str) -> str | None:
    key = check_text(value, name, optional=True, limit=MAX_KEY_CHARS)
    if key is not None and "\x00" in key:
        raise ValueError(f"{name} must not contain NUL characters")
    return key


# ------------------------------------------------------------------ the API


def submit(conn: psycopg.Connection, *, tenant_id: int, kind: str, payload: dict,
           idempotency_key: str | None = None, max_attempts: int = 3,
           run_after: datetime | float | None = None,
           deadline: datetime | float | None = None, priority: int = 0,
           dedupe_key: str | None = None) -> int:
    """Persist a job and return its id; only then may the caller answer "accepted".

    `payload` is a JSON object of at most MAX_PAYLOAD_BYTES. `run_after` and `deadline`
    are aware datetimes or seconds from now (database clock); `deadline` is when retries
    stop being scheduled. `run_after` is at most MAX_RUN_AFTER seconds ahead (a datetime
    further ahead is refused), and a datetime in the past means now: a job never sorts
    ahead of jobs already due (limits.check_run_after). With `idempotency_key` (at most
    MAX_KEY_CHARS characters), a second submit by the same tenant returns the first job's
    id (also when both race), and the first job's fields win.

    `priority` (0..MAX_PRIORITY, default 0) is a head start in the claim order of
    PRIORITY_AGING seconds per level: higher first, but a job waits behind a job of
    priority q only if that one became due less than (q - its priority) * PRIORITY_AGING
    seconds after it, so a flood of high priorities delays a low one by a bounded amount
    of arrivals and never starves it. `dedupe_key` (at most MAX_KEY_CHARS characters) is
    unique per tenant only while its job is pending or running: a submit while it is
    returns that job's id (its fields win); once it is done, failed or cancelled the key
    is free and the next submit creates a new job. Use `submission()` to learn whether a
    job was created. Raises UnknownKind, PayloadTooLarge, InvalidJob, ValueError or
    TypeError, writing nothing.
    """
    return submission(conn, tenant_id=tenant_id, kind=kind, payload=payload,
                      idempotency_key=idempotency_key, max_attempts=max_attempts,
                      run_after=run_after, deadline=deadline, priority=priority,
                      dedupe_key=dedupe_key).job_id


def submission(conn: psycopg.Connection, *, tenant_id: int, kind: str, payload: dict,
               idempotency_key: str | None = None, max_attempts: int = 3,
               run_after: datetime | float | None = None,
               deadline: datetime | float | None = None, priority: int = 0,
               dedupe_key: str | None = None) -> Submitted:
    """submit(), saying what happened: Submitted(job_id, created, matched). With both keys,
    the idempotency key is looked up first."""
    params = {
        "tenant_id": check_int(tenant_id, "tenant_id"),
        "kind": check_text(kind, "kind"),
        "idempotency_key": _key(idempotency_key, "idempotency_key"),
        "dedupe_key": _key(dedupe_key, "dedupe_key"),
        "priority": check_int(priority, "priority", minimum=0, maximum=MAX_PRIORITY),
        "max_attempts": check_int(max_attempts, "max_attempts", minimum=1),
        "max_run_after": MAX_RUN_AFTER,
    }
    params["payload"] = payload_json(payload)
    params["run_after_at"], params["run_after_in"] = check_run_after(run_after)
    params["deadline_at"], params["deadline_in"] = check_when(deadline, "deadline", positive=True)
    for _ in range(_SUBMIT_TRIES):
        try:
            row = conn.execute(query("submit").sql, params).fetchone()
        except psycopg.errors.UntranslatableCharacter as exc:  # e.g. "\u0000" in a JSON string
            raise InvalidJob(f"payload cannot be stored as jsonb: {exc.diag.message_primary}") from None
        if row is not None:
            return Submitted(row[0], True)
        # Nothing inserted: the kind is unknown, run_after is too far ahead, or a key is
        # taken (its insert has committed by now: the unique index made ours wait for it).
        existing, active, kind_known, in_range = conn.execute(query("submitted").sql,
                                                              params).fetchone()
        if not kind_known:
            raise UnknownKind(f"unknown job kind {kind!r}; known kinds are rows of job_kinds")
        if not in_range:
            raise ValueError(f"run_after must be at most {MAX_RUN_AFTER:g} seconds (365 days) "
                             f"from now, got {run_after!r}")
        if existing is not None:
            return Submitted(existing, False, "idempotency_key")
        if active is not None:
            return Submitted(active, False, "dedupe_key")
        if dedupe_key is None:  # the key's job was deleted between the two statements
            raise InvalidJob(f"idempotency key {idempotency_key!r} was released concurrently; "
                             "submit again")
        # The job holding the dedupe key finished between the two statements: the key is
        # free now, so the insert is tried again.
    raise InvalidJob(f"dedupe key {dedupe_key!r} was taken and released {_SUBMIT_TRIES} times "
                     "while this submit ran; submit again")


def claim_many(conn: psycopg.Connection, limit: int, *, lease: float = 30.0,
               kinds: Iterable[str] | None = None, worker: str | None = None) -> list[Claim]:
    """Claim up to `limit` runnable jobs in ONE statement (`FOR UPDATE SKIP LOCKED`).

    Runnable: running with an expired lease and attempts left (taken first), or pending
    with run_after <= cq_now(). Each claimed job gets state running, attempts + 1, a fresh
    lease token and locked_until = cq_now() + lease, and an attempt row, in the same
    statement. Expired leases with no attempts left are failed on the way. An empty list
    means "nothing claimable now", not "all done". On its own (autocommit) the claim commits
    without waiting for the disk: a claim lost in a crash never happened (the job is
    runnable again at once, as before it, and its attempt row is gone, so the next claim
    takes the same attempt number with a new token); the holder's finish or fail, a later
    durable commit, makes the claim durable with it. Inside a caller's transaction nothing
    changes.
    """
    params = {"limit": check_int(limit, "limit", minimum=1), "lease": check_lease(lease),
              "kinds": check_kinds(kinds), "worker": check_text(worker, "worker", optional=True),
              "chosen": None}
    own = conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE
    return _claimed(conn, params, durable=not own)


def _claimed(conn: psycopg.Connection, params: dict[str, Any], *, durable: bool) -> list[Claim]:
    """Run the claim statement (also for queue.fairness, which passes the jobs it chose).

    The claim turns synchronous_commit off for its own transaction; `durable` puts the
    caller's setting back afterwards, for a claim made inside the caller's transaction.
    """
    if not durable:
        return [Claim(*row) for row in conn.execute(query("claim").sql, params).fetchall()]
    mode = conn.execute(query("commit_mode").sql).fetchone()[0]
    rows = conn.execute(query("claim").sql, params).fetchall()
    conn.execute(query("set_commit_mode").sql, {"mode": mode})
    return [Claim(*row) for row in rows]


def claim(conn: psycopg.Connection, *, lease: float = 30.0, kinds: Iterable[str] | None = None,
          worker: str | None = None) -> Claim | None:
    """Claim one runnable job (see claim_many), or None when nothing is claimable now."""
    claims = claim_many(conn, 1, lease=lease, kinds=kinds, worker=worker)
    return claims[0] if claims else None


def heartbeat(conn: psycopg.Connection, claim: Claim, lease: float = 30.0) -> bool:
    """Extend the lease to cq_now() + lease if this attempt still holds it and it has not
    expired. False means the lease is lost: stop working and do not publish anything."""
    params = _claim_params(conn, claim) | {"lease": check_lease(lease)}
    return _run_with_claim(conn, "heartbeat", claim, params)[0] is not None


def finish(conn: psycopg.Connection, claim: Claim, output: Any) -> bool:
    """Record `output` (JSON, at most MAX_PAYLOAD_BYTES) and mark the job done, in one statement.

    Succeeds only while this attempt holds an unexpired lease on a running job. Returns
    False when the lease was lost (expired, reclaimed), the job was cancelled, or the token
    is not the job's: nothing is written but a note on this attempt's own row
    (`rejected_report`, see history). The result row is unique per job.
    """
    params = _claim_params(conn, claim) | {"output": to_json(output, "output")}
    return _run_with_claim(conn, "finish", claim, params)[0] == 1


def finish_many_params(job_ids: list[int], lease_tokens: list[uuid.UUID], outputs: list[str],
                       schema: str) -> dict[str, str]:
    """The parameters of the finish_many statement: an array literal of the ids, one of the
    tokens and a JSON array of the outputs (each already JSON text, from to_json), joined as
    strings (see queries.sql); the values must have been checked by the caller."""
    return {"job_ids": "{" + ",".join(map(str, job_ids)) + "}",
            "lease_tokens": "{" + ",".join(map(str, lease_tokens)) + "}",
            "outputs": "[" + ",".join(outputs) + "]", "schema": schema}


def finish_many(conn: psycopg.Connection, results: Iterable[tuple[Claim, Any]]) -> list[bool]:
    """finish() for several (claim, output) pairs in ONE statement; a bool per pair, in order.

    Each pair succeeds or not on its own lease, exactly as finish() would; the results of
    the successful ones commit together. Fewer commits per job is the point (a worker that
    claimed ten no-op jobs with claim_many); the price is that an early result waits for
    the batch. The claims must be distinct jobs of one schema.
    """
    pairs = list(results)
    if not pairs:
        return []
    params = [_claim_params(conn, claim) for claim, _ in pairs]
    schemas = {p["schema"] for p in params}
    if len(schemas) > 1:
        raise ForeignClaim(f"claims from several schemas {sorted(schemas)}; nothing was changed")
    job_ids = [p["job_id"] for p in params]
    if len(set(job_ids)) != len(job_ids):
        raise ValueError("each job may appear once in finish_many()")
    first = pairs[0][0]
    row = _run_with_claim(conn, "finish_many", first, finish_many_params(
        job_ids, [p["lease_token"] for p in params],
        [to_json(output, "output") for _, output in pairs], first.schema), prepare=BATCH_PLAN)
    finished = set(row[0])
    return [job_id in finished for job_id in job_ids]


def fail(conn: psycopg.Connection, claim: Claim, error: BaseException | str, *,
         permanent: bool = False, policy: RetryPolicy | None = None,
         rng: random.Random | None = None) -> str | None:
    """Record `error` for this attempt and decide what happens next; return the new state.

    'failed' when `permanent`, when the attempts are used up (the job's max_attempts, or
    the smaller of that and policy.max_attempts when a policy is given), or when the retry
    would start after the deadline (the job's, or created_at + policy.deadline); otherwise
    'pending' with run_after = cq_now() + policy.delay(attempt, rng). Without a policy the
    delays are those of RetryPolicy() and only the job's own limits apply. None when the
    lease was lost (nothing written but the refusal on this attempt's row, as for finish).
    The error text is kept, cut to MAX_ERROR_CHARS.
    """
    if policy is not None:
        check_instance(policy, "policy", RetryPolicy)
    limits = policy  # None: the job's own max_attempts and deadline decide alone
    policy = RetryPolicy() if policy is None else policy
    check_bool(permanent, "permanent")
    params = _claim_params(conn, claim) | {
        "error": error_text(error),
        "permanent": permanent,
        "policy_max_attempts": None if limits is None else limits.max_attempts,
        "policy_deadline": None if limits is None else limits.deadline,
        "delay": policy.delay(check_int(claim.attempt, "claim.attempt", minimum=1), rng),
    }
    return _run_with_claim(conn, "fail", claim, params)[0]


def cancel(conn: psycopg.Connection, *, tenant_id: int, job_id: int, actor: str,
           reason: str) -> bool:
    """Cancel a pending or running job of this tenant, with an audit row; True if it was.

    A running holder is not interrupted, but its later finish/fail/heartbeat return
    False/None. False for a finished, missing or other tenant's job.
    """
    params = {"tenant_id": check_int(tenant_id, "tenant_id"), "job_id": check_int(job_id, "job_id"),
              "actor": check_text(actor, "actor"), "reason": check_text(reason, "reason", limit=1000)}
    return conn.execute(query("cancel").sql, params).fetchone()[0] == 1


def release(conn: psycopg.Connection, claim: Claim, reason: str) -> str | None:
    """Hand a held job back, for a worker that stops before the job is done; the new state.

    'pending': the job is claimable again at once (no backoff: nothing went wrong with it).
    This attempt is closed with outcome 'released' and `reason` as its error; `attempts`
    keeps counting it (attempt numbers name attempt rows) and `handbacks` goes up by one,
    so it does not use up one of the job's `max_attempts`. 'failed': this was hand-back
    number MAX_HANDBACKS, and last_error says so (a handler that outlives every worker's
    shutdown would otherwise be handed back for ever). None, writing nothing, when the
    lease was already lost. The handler may still be running: it must not publish
    anything after this (its finish would be refused by the lease token anyway).
    """
    params = _claim_params(conn, claim) | {"reason": check_text(reason, "reason", limit=1000),
                                           "max_handbacks": MAX_HANDBACKS}
    return _run_with_claim(conn, "release", claim, params)[0]


def retry(conn: psycopg.Connection, *, tenant_id: int, job_id: int, actor: str, reason: str,
          attempts: int | None = None) -> bool:
    """Manually put a failed job back to pending, audited (actor, reason, time, attempts so far).

    The job id (business id) stays; attempt numbers continue, and each new attempt gets a
    new lease token. The job gets `attempts` more tries (default: as many as it was
    submitted with), and its hand-backs count from 0 again. Returns False, writing nothing,
    unless the job is this tenant's and failed.
    """
    params = {"tenant_ids": [check_int(tenant_id, "tenant_id")],
              "job_ids": [check_int(job_id, "job_id")], "failed_at": [None],
              "actor": check_text(actor, "actor"), "reason": check_text(reason, "reason", limit=1000),
              "attempts": None if attempts is None else check_int(attempts, "attempts", minimum=1),
              "filter": None}
    return conn.execute(query("retry").sql, params).fetchone()[0] == [job_id]


def status(conn: psycopg.Connection, *, tenant_id: int, job_id: int) -> JobStatus | None:
    """The job as the jobs table says, or None when it is missing OR another tenant's:
    the two cases are indistinguishable on purpose (no existence leak)."""
    params = {"tenant_id": check_int(tenant_id, "tenant_id"), "job_id": check_int(job_id, "job_id")}
    row = conn.execute(query("status").sql, params).fetchone()
    return None if row is None else JobStatus(*row)


def _rows(conn: psycopg.Connection, name: str, job_id: int | None) -> list[dict]:
    params = {"job_id": None if job_id is None else check_int(job_id, "job_id")}
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query(name).sql, params).fetchall()


def history(conn: psycopg.Connection, job_id: int | None = None) -> list[dict]:
    """Attempt rows (job_id, attempt, lease_token, worker, started_at, finished_at, outcome,
    error, rejected_report, rejected_at), ordered by job and attempt; of one job, or of
    every job when job_id is None. `rejected_report` ('finish' or 'fail') says that this
    attempt's holder reported after it had lost its lease, and was refused."""
    return _rows(conn, "history", job_id)


def audit(conn: psycopg.Connection, job_id: int | None = None) -> list[dict]:
    """Audit rows (id, job_id, tenant_id, actor, action, reason, at, detail), oldest first."""
    return _rows(conn, "audit", job_id)
