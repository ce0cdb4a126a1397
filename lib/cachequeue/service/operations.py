"""What the routes do, as plain functions of a connection: submit, check access, status, readiness.

The route functions only read the request and shape the answer; the decisions live here
(and in `queue.jobs`, which these call), where a test can call them without HTTP. Every
function takes an autocommit connection to the service's schema and raises `Problem` for an
answer other than success. Errors of the queue (unknown kind, payload too large) become
4xx answers; nothing is written when they happen.

Access has two layers, at submit and at every read. The queue's own: a job belongs to a
tenant, and a job of another tenant is reported exactly like a job that does not exist
(404: no existence leak). The app's own, optional: `check_submit(principal, kind, payload)`
refuses a job the caller may not ask for, by raising a Problem (the course's app answers a
summary of another tenant's document with the same 404 as a missing document, before
anything is written), and `can_read(principal, kind, payload)` may refuse more when a job
is read (a summary of a document the user may not read), also as a 404.

Readiness (`check_ready`) proves, without writing anything (no row lock, no transaction id,
no WAL): a pooled connection within ready_timeout; the queue's claim index can be read in
this schema without waiting past that timeout (a migration holding the jobs table is "not
ready"); no lock is granted on the table that would make claims or submits wait (SHARE or
stronger: CREATE INDEX, LOCK TABLE); and the server takes writes (a primary, not read-only),
so the claims and commits the probe does not make would succeed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import Any

import psycopg

from .. import sqlfile
from ..errors import InvalidJob, PayloadTooLarge, UnknownKind
from ..queue import jobs
from .auth import Principal
from .problems import Problem
from .requests import HTTP_KEY_PREFIX, JobRequest, excerpt
from .tenantlimits import TenantLimits

__all__ = ["HTTP_KEY_PREFIX", "CanRead", "CheckSubmit", "NotReady", "cancel_job", "check_ready",
           "job_status",
           "readable", "registered_kinds", "submit_job", "submit_or_problem"]

CanRead = Callable[[Principal, str, dict], bool]
# (principal, kind, payload) -> None; raises a Problem to refuse the job before it is written.
CheckSubmit = Callable[[Principal, str, dict], None]
# Keys from the Idempotency-Key header live in their own namespace (HTTP_KEY_PREFIX), so a
# client cannot collide with the business keys an app uses (e.g. "summary:1:42:v3:brief-zh").
_QUERIES = sqlfile.load(__package__, "service.sql")
# How far apart the run_after of a repeated request and of the job it found may be and still
# be "the same request": the two clock readings of one insert differ by microseconds.
_SAME_TIME = timedelta(seconds=1)


class NotReady(Exception):
    """The database answers, but claims would not succeed now (the message says why)."""


def _not_found(job_id: int) -> Problem:
    return Problem(404, "not_found", f"no job {job_id}")


def submit_or_problem(conn: psycopg.Connection, principal: Principal, kind: str,
                      payload: dict, **options: Any) -> int:
    """`jobs.submit` for this principal's tenant; the queue's refusals as 4xx Problems."""
    try:
        return jobs.submit(conn, tenant_id=principal.tenant_id, kind=kind, payload=payload,
                           **options)
    except UnknownKind as exc:
        raise Problem(422, "unknown_kind", str(exc)) from None
    except PayloadTooLarge as exc:
        raise Problem(413, "payload_too_large", str(exc)) from None
    except (InvalidJob, TypeError, ValueError) as exc:
        text = str(exc)
        when = options.get("run_after")
        if isinstance(when, datetime):  # as the client wrote it, not a Python repr
            text = text.replace(repr(when), when.isoformat())
        raise Problem(422, "invalid_job", text) from None


def _refuse_unserved(kind: str, worker_kinds: Collection[str] | None) -> None:
    if worker_kinds is not None and kind not in worker_kinds:
        raise Problem(422, "no_worker_for_kind",
                      f"no worker of this service runs kind {excerpt(kind)} (they run "
                      f"{', '.join(sorted(worker_kinds))}); such a job would wait forever")


def _same_request(row: tuple, request: JobRequest) -> bool:
    """Whether a repeated request asks for the job it found: kind, payload, max_attempts,
    and run_after as it was asked for (seconds after the job was created, or a time, which
    a time in the past made the creation time)."""
    kind, payload, _state, max_attempts, run_after, created_at = row
    if (kind, payload, max_attempts) != (request.kind, request.payload, request.max_attempts):
        return False
    if isinstance(request.run_after, datetime):
        expected = max(request.run_after, created_at)
    else:
        expected = created_at + timedelta(seconds=request.run_after or 0)
    return abs(run_after - expected) <= _SAME_TIME


def submit_job(conn: psycopg.Connection, principal: Principal, request: JobRequest,
               key: str | None = None, *, check_submit: CheckSubmit | None = None,
               worker_kinds: Collection[str] | None = None,
               max_pending: int = 0, retry_after: int = 1,
               limits: TenantLimits | None = None) -> tuple[int, str]:
    """Persist the job (committed when this returns); return its id and state.

    First the app's `check_submit` (which raises a Problem to refuse) and the kinds the
    service's workers run; nothing is written when either refuses. With an
    Idempotency-Key, a repeat returns the first job's id and its state now; the same key
    with a different kind, payload, max_attempts or run_after is a 422
    (draft-ietf-httpapi-idempotency-key-header: "reuse of an idempotency key with a
    different request payload"), since the client would otherwise believe its second
    request was taken. (409 is the draft's answer for a key whose first request is still
    in progress; a submit is one statement, so that cannot happen here.)

    With `limits` (a `tenantlimits.TenantLimits` whose submit rate is on), the submit takes
    a token of the tenant's bucket in the database first: 429 `rate_limited` without one.
    With `max_pending` (> 0), a tenant that has that many pending jobs gets 429
    `too_many_pending` (Retry-After `retry_after`) for a new job; a repeat of an
    Idempotency-Key it used is still answered. The token, the count and the insert run in
    one transaction under a lock per tenant, so concurrent submits cannot pass the cap
    together, and a submit refused at any step keeps its token (the transaction rolls back).
    """
    if check_submit is not None:
        check_submit(principal, request.kind, request.payload)
    _refuse_unserved(request.kind, worker_kinds)
    stored_key = None if key is None else HTTP_KEY_PREFIX + key

    def insert() -> int:
        return submit_or_problem(conn, principal, request.kind, request.payload,
                                 idempotency_key=stored_key, max_attempts=request.max_attempts,
                                 run_after=request.run_after)

    rated = limits is not None and bool(limits.submit_rate)
    if max_pending or rated:
        with conn.transaction():
            if rated:  # first: the bucket row's lock, then (with the cap) the tenant's lock
                limits.admit_submit(conn, principal.tenant_id)
            job_id = (_capped_insert(conn, principal.tenant_id, stored_key, max_pending,
                                     retry_after, insert) if max_pending else insert())
    else:
        job_id = insert()
    if key is None:
        return job_id, "pending"
    row = conn.execute(_QUERIES["job_fields"].sql, {
        "job_id": job_id, "tenant_id": principal.tenant_id}).fetchone()
    if not _same_request(row, request):
        raise Problem(422, "idempotency_key_reused",
                      f"Idempotency-Key {excerpt(key)} was used for job {job_id} with another "
                      "kind, payload, max_attempts or run_after; use a new key for a new job")
    return job_id, row[2]


def _capped_insert(conn: psycopg.Connection, tenant_id: int, stored_key: str | None,
                   max_pending: int, retry_after: int, insert: Callable[[], int]) -> int:
    """The insert, unless the tenant has max_pending jobs waiting (429): under a lock per
    tenant held to the end of the caller's transaction, so the count and the insert are
    one step for every submit of the tenant."""
    tenant = {"tenant_id": tenant_id}
    conn.execute(_QUERIES["tenant_submit_lock"].sql, tenant)
    repeat = stored_key is not None and conn.execute(
        _QUERIES["key_taken"].sql, tenant | {"key": stored_key}).fetchone()[0]
    pending = conn.execute(_QUERIES["pending_count"].sql,
                           tenant | {"cap": max_pending}).fetchone()[0]
    if not repeat and pending >= max_pending:
        raise Problem(429, "too_many_pending",
                      f"this tenant has {max_pending} jobs waiting, the most allowed; "
                      "submit more once some have run", {"Retry-After": str(retry_after)})
    return insert()


def registered_kinds(conn: psycopg.Connection) -> list[str]:
    """The kinds the queue knows (rows of job_kinds), sorted."""
    return [row[0] for row in conn.execute(_QUERIES["kinds"].sql)]


def readable(conn: psycopg.Connection, principal: Principal, job_id: int,
             can_read: CanRead | None = None) -> None:
    """Return if the principal may see the job; a 404 Problem otherwise (missing, another
    tenant's, or refused by the app's `can_read`: the same answer for all three)."""
    row = conn.execute(_QUERIES["job_request"].sql,
                       {"job_id": job_id, "tenant_id": principal.tenant_id}).fetchone()
    if row is None or (can_read is not None and not can_read(principal, row[0], row[1])):
        raise _not_found(job_id)


def cancel_job(conn: psycopg.Connection, principal: Principal, job_id: int,
               can_read: CanRead | None = None) -> jobs.JobStatus:
    """Cancel this tenant's pending or running job (`jobs.cancel`, with an audit row naming
    the caller); the job as it is now. 404 as for a read; 409 `not_cancellable` for a job
    that is done, failed or cancelled already (nothing written)."""
    readable(conn, principal, job_id, can_read)
    actor = (f"api:user:{principal.user_id}" if principal.user_id is not None
             else f"api:tenant:{principal.tenant_id}")
    if not jobs.cancel(conn, tenant_id=principal.tenant_id, job_id=job_id, actor=actor,
                       reason="cancelled through the HTTP API"):
        status = jobs.status(conn, tenant_id=principal.tenant_id, job_id=job_id)
        if status is None:
            raise _not_found(job_id)
        raise Problem(409, "not_cancellable",
                      f"job {job_id} is {status.state}; only a pending or running job can be "
                      "cancelled")
    status = jobs.status(conn, tenant_id=principal.tenant_id, job_id=job_id)
    if status is None:
        raise _not_found(job_id)
    return status


def job_status(conn: psycopg.Connection, principal: Principal, job_id: int,
               can_read: CanRead | None = None) -> jobs.JobStatus:
    """The job as the jobs table says now (Q16), after the access check."""
    readable(conn, principal, job_id, can_read)
    status = jobs.status(conn, tenant_id=principal.tenant_id, job_id=job_id)
    if status is None:  # deleted between the two statements
        raise _not_found(job_id)
    return status


def check_ready(conn: psycopg.Connection, timeout: float) -> int:
    """The readiness probe (see the module docstring), in one read-only transaction with a
    statement and lock timeout. Returns the number of runnable jobs it saw (0 or 1); raises
    NotReady, or what the database raised, when claims would not succeed now."""
    with conn.transaction():
        conn.execute(_QUERIES["ready_timeout"].sql, {"ms": str(max(1, int(timeout * 1000)))})
        runnable, read_only, locked = conn.execute(_QUERIES["ready"].sql).fetchone()
    if read_only:
        raise NotReady("the server does not take writes (a standby, or read-only)")
    if locked is not None:
        raise NotReady(f"the jobs table is locked in {locked} by another session")
    return runnable
