"""What the routes do, as plain functions of a connection: submit, check access, status, readiness.

The route functions only read the request and shape the answer; the decisions live here
(and in `queue.jobs`, which these call), where a test can call them without HTTP. Every
function takes an autocommit connection to the service's schema and raises `Problem` for an
answer other than success. Errors of the queue (unknown kind, payload too large) become
4xx answers; nothing is written when they happen.

Access has two layers. The queue's own: a job belongs to a tenant, and a job of another
tenant is reported exactly like a job that does not exist (404: no existence leak). The
app's own, optional: `can_read(principal, kind, payload)` may refuse more (the course's app
refuses a summary of a document the user may not read), also as a 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from .. import sqlfile
from ..errors import InvalidJob, PayloadTooLarge, UnknownKind
from ..queue import jobs
from .auth import Principal
from .problems import Problem
from .requests import JobRequest

__all__ = ["HTTP_KEY_PREFIX", "CanRead", "check_ready", "job_status", "readable", "submit_job",
           "submit_or_problem"]

CanRead = Callable[[Principal, str, dict], bool]
# Keys from the Idempotency-Key header live in their own namespace, so a client cannot
# collide with the business keys an app uses (e.g. "summary:1:42:v3:brief-zh").
HTTP_KEY_PREFIX = "http:"
_QUERIES = sqlfile.load(__package__, "service.sql")


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
        raise Problem(422, "invalid_job", str(exc)) from None


def submit_job(conn: psycopg.Connection, principal: Principal, request: JobRequest,
               key: str | None = None) -> tuple[int, str]:
    """Persist the job (committed when this returns); return its id and state.

    With an Idempotency-Key, a repeat returns the first job's id and its state now; the same
    key with a different kind or payload is a 422 (draft-ietf-httpapi-idempotency-key-header),
    since the client would otherwise believe its second request was taken.
    """
    stored_key = None if key is None else HTTP_KEY_PREFIX + key
    job_id = submit_or_problem(conn, principal, request.kind, request.payload,
                               idempotency_key=stored_key, max_attempts=request.max_attempts,
                               run_after=request.run_after)
    if key is None:
        return job_id, "pending"
    kind, payload, state = conn.execute(_QUERIES["job_request"].sql, {
        "job_id": job_id, "tenant_id": principal.tenant_id}).fetchone()
    if (kind, payload) != (request.kind, request.payload):
        raise Problem(422, "idempotency_key_reused",
                      f"Idempotency-Key {key!r} was used for job {job_id} with another "
                      "kind or payload; use a new key for a new job")
    return job_id, state


def readable(conn: psycopg.Connection, principal: Principal, job_id: int,
             can_read: CanRead | None = None) -> None:
    """Return if the principal may see the job; a 404 Problem otherwise (missing, another
    tenant's, or refused by the app's `can_read`: the same answer for all three)."""
    row = conn.execute(_QUERIES["job_request"].sql,
                       {"job_id": job_id, "tenant_id": principal.tenant_id}).fetchone()
    if row is None or (can_read is not None and not can_read(principal, row[0], row[1])):
        raise _not_found(job_id)


def job_status(conn: psycopg.Connection, principal: Principal, job_id: int,
               can_read: CanRead | None = None) -> jobs.JobStatus:
    """The job as the jobs table says now (Q16), after the access check."""
    readable(conn, principal, job_id, can_read)
    status = jobs.status(conn, tenant_id=principal.tenant_id, job_id=job_id)
    if status is None:  # deleted between the two statements
        raise _not_found(job_id)
    return status


def check_ready(conn: psycopg.Connection, timeout: float) -> int:
    """The readiness probe: in one transaction with a statement (and lock) timeout, run the
    claim's first step read-only, then commit. Returns the number of runnable jobs it saw
    (0 or 1); raises what the database raised when it cannot."""
    with conn.transaction():
        conn.execute(_QUERIES["ready_timeout"].sql, {"ms": str(max(1, int(timeout * 1000)))})
        return conn.execute(_QUERIES["ready"].sql).fetchone()[0]
