"""/v1/jobs: submit (202), status (200, from the jobs table), events (server-sent events).

    POST /v1/jobs                 {"kind", "payload", "max_attempts"?, "run_after"?}
                                  [Idempotency-Key: ...] -> 202, Location, Retry-After
    GET  /v1/jobs/{id}            -> {id, state, attempts, last_error, output, ...}
    POST /v1/jobs/{id}/cancel     -> 200 {the job, cancelled}; 409 when it is final
    GET  /v1/jobs/{id}/events     [Last-Event-ID: n] -> text/event-stream, events n+1, ...

Every route needs a bearer token, checked before anything else of the request is read
(the body of POST is read by the route, after its `Caller` dependency); a job of another
tenant is a 404 on all of them. An id is decimal digits, no sign and no leading zero
(`requests.ID_PATTERN`): "+1" and "01" are not job 1. The route functions only read the
request and shape the answer: the checks are in `requests`, the decisions in
`operations`, the history in `events`, the OpenAPI description of bodies and errors in
`docs`.

Job ids are the jobs table's own: global and increasing. A tenant that submits two jobs
learns how many jobs all tenants together submitted in between, and nothing more: every
other tenant's job is the same 404 as a missing id, with the same body and headers, so
ids confirm no job's existence, kind or owner. The ids stay as they are because they are
the key every chapter, log line, event stream and Location header uses, and an opaque
public id buys little for that one number: encrypting the id (a keyed permutation of the
bigint) adds a secret every replica must share and can never change without breaking
every Location already handed out, and a random id adds a second unique index on the
insert path. A deployment whose tenants must not learn the service's volume (competitors
on one platform) should put such an opaque id at this edge: the queue need not change.

An event stream subscribes to its job in the process's `Hub`, sends the events after
Last-Event-ID, then sleeps until the hub wakes it and reads again; it ends when the job is
final (done, failed, cancelled) or the server is stopping. The re-reads are not requests:
they are never shed, they wait for a slot of their own and every stream of a job shares
one (`streamreads`). A re-read that fails (the database restarts) is tried again, with a
growing pause, for up to STREAM_OUTAGE_SECONDS; after that, or on any other error, the
stream ends cleanly with a comment and a `retry:` hint, and the client resumes with
Last-Event-ID: a started 200 never ends in a server error. A client that reconnects to a
final job with nothing new gets 204 No Content, which tells a browser's EventSource to
stop reconnecting. A client that disconnects is noticed at once (Starlette listens for
it); its subscription is dropped in `finally`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Path, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException

from ...queue import notify
from ..auth import Caller, Principal
from ..docs import JOB_REQUEST, json_body, problems
from ..events import History, history
from ..operations import cancel_job, job_status, readable, submit_job
from ..problems import DATABASE_ERRORS, Problem
from ..requests import (
    ID_PATTERN,
    MAX_KEY_CHARS,
    idempotency_key,
    job_id,
    last_event_id,
    parse_job_request,
    read_body,
    require_json,
)
from ..responses import accepted, retry_after_for, status_response
from ..runtime import Service, ServiceDep

__all__ = ["RECONNECT_MS", "STREAM_OUTAGE_SECONDS", "router"]

RECONNECT_MS = 1000  # the `retry:` field: how long an EventSource waits before reconnecting
STREAM_OUTAGE_SECONDS = 60.0  # how long a stream's re-read is retried before it ends cleanly
_RETRY_CAP = 2.0  # seconds: the longest pause between two tries of a failed re-read
JobId = Annotated[str, Path(pattern=ID_PATTERN, max_length=19,
                            description="a job id: decimal digits, no sign, no leading zero")]
# The schema extras only describe (the OpenAPI document); the checks, and their 400s, are
# requests.idempotency_key and requests.last_event_id.
# Typed `str` (default None) rather than `str | None`: a header is a string when sent, and
# `str | None` would document anyOf [string, null] with the bounds beside it, not on the string.
IdempotencyKey = Annotated[str, Header(
    alias="Idempotency-Key", description=f"at most {MAX_KEY_CHARS} characters; a repeat with "
    "the same key returns the first job; send one", json_schema_extra={
        "minLength": 1, "maxLength": MAX_KEY_CHARS, "pattern": r"\S"})]
LastEventId = Annotated[str, Header(
    alias="Last-Event-ID", description="the number of the last event the client has",
    json_schema_extra={"pattern": "^[0-9]{0,18}$"})]

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.post("", status_code=202, openapi_extra=json_body(JOB_REQUEST),
             responses=problems(400, 401, 404, 413, 415, 422, 429, 503))
async def submit(request: Request, principal: Caller, service: ServiceDep,
                 idempotency_key_header: IdempotencyKey = None):
    if len(request.headers.getlist("idempotency-key")) > 1:  # which one would count?
        raise Problem(400, "bad_idempotency_key", "send one Idempotency-Key header, not several")
    key = idempotency_key(idempotency_key_header)
    require_json(request)
    job = parse_job_request(await read_body(request))
    job_id, state = await service.call(submit_job, principal, job, key,
                                       check_submit=service.check_submit,
                                       worker_kinds=service.worker_kinds,
                                       max_pending=service.max_pending,
                                       retry_after=service.retry_after,
                                       limits=service.limits)  # the tenant's rate: 429
    return accepted(job_id, state=state,
                    retry_after=retry_after_for(service.retry_after, job.run_after))


@router.get("/{job_id}", responses=problems(400, 401, 404, 422, 503))
async def status(job_id: JobId, principal: Caller, service: ServiceDep):
    found = await service.call(job_status, principal, _job_id(job_id), service.can_read)
    return status_response(found, retry_after=service.retry_after)


@router.post("/{job_id}/cancel", responses=problems(400, 401, 404, 409, 422, 503))
async def cancel(job_id: JobId, principal: Caller, service: ServiceDep):
    """Cancel one of the tenant's own jobs while it is pending or running (a running
    handler is told through its lease: its result is refused)."""
    found = await service.call(cancel_job, principal, _job_id(job_id), service.can_read)
    return status_response(found, retry_after=service.retry_after)


_job_id = job_id  # the route parameter of the same name hides the function


@dataclass(frozen=True)
class _Opening:
    tenant_id: int
    job_id: int
    after: int
    first: History
    version: int  # the hub's version before `first` was read


def _open(conn, principal: Principal, job_id: int, after: int, can_read) -> History:
    readable(conn, principal, job_id, can_read)
    # Watched before the first read: every later claim and finish of the job notifies.
    notify.watch(conn, tenant_id=principal.tenant_id, job_id=job_id)
    return history(conn, tenant_id=principal.tenant_id, job_id=job_id, after=after)


async def _opening(job_id: JobId, principal: Caller,
                   service: ServiceDep,
                   last_event_id_header: LastEventId = None,
                   ) -> _Opening:
    """Checks made before the stream starts, while a status code can still be chosen."""
    after = last_event_id(last_event_id_header)
    job_id = _job_id(job_id)
    service.limits.check_stream(principal.tenant_id, service.retry_after)
    version = service.hub.version
    first = await service.call(_open, principal, job_id, after, service.can_read)
    if first.final and not first.events:
        raise HTTPException(204)  # nothing more will come: EventSource stops reconnecting
    return _Opening(principal.tenant_id, job_id, after, first, version)


async def _stream(service: Service, opening: _Opening) -> AsyncIterator[ServerSentEvent]:
    """Send the events after `opening.after`, then one read per wake-up, until final.

    No read is missed and none is wasted: the first batch was read before the subscription
    existed, so the hub's version says whether anything was dispatched meanwhile; after
    that, the subscription is cleared before each read, so a change committed after the
    read has woken it by the time it is checked.
    """
    hub, job_id, after, batch = service.hub, opening.job_id, opening.after, opening.first
    key = (opening.tenant_id, job_id)

    def read(conn, since: int) -> History:  # `history` looked up here: tests count calls
        return history(conn, tenant_id=opening.tenant_id, job_id=job_id, after=since)

    sub = hub.subscribe(job_id)
    service.limits.stream_started(opening.tenant_id)
    try:
        stale = hub.version != opening.version
        retry: int | None = RECONNECT_MS
        while True:
            for event in batch.events:
                yield ServerSentEvent(id=str(event.seq), event=event.event,
                                      data=event.data(job_id), retry=retry)
                after, retry = event.seq, None
            if batch.final or not batch.found or sub.closing:
                return
            if not (stale or sub.changed):
                await sub.wait()  # no query and no thread while nothing happens
            sub.clear()
            stale = False
            found = await _reread(service, key, after, read)
            if found is None:  # the database stayed away, or a bug: end cleanly, resumable
                yield ServerSentEvent(comment="the stream ends here; reconnect with "
                                              "Last-Event-ID", retry=RECONNECT_MS)
                return
            batch = found
    finally:
        hub.unsubscribe(sub)
        service.limits.stream_ended(opening.tenant_id)


async def _reread(service: Service, key: tuple[int, int], after: int, read) -> History | None:
    """The stream's next batch (shared, see streamreads), tried again while the database is
    away, up to STREAM_OUTAGE_SECONDS; None when the stream should end (logged)."""
    give_up, pause = time.monotonic() + STREAM_OUTAGE_SECONDS, 0.1
    while True:
        try:
            return await service.stream_reads.read(key, after, read)
        except DATABASE_ERRORS as exc:
            if service.hub.closing or time.monotonic() >= give_up:
                service.log("stream-ended", job_id=key[1], reason=type(exc).__name__)
                return None
            pause = min(_RETRY_CAP, pause * 2)
            await asyncio.sleep(pause * random.uniform(0.5, 1.0))  # jitter: not in step
            if service.hub.closing:  # the server is stopping: the client resumes elsewhere
                return None
        except Exception as exc:  # a bug: the stream ends cleanly, the log says why
            service.log("stream-error", job_id=key[1], type=type(exc).__name__)
            return None


@router.get("/{job_id}/events", response_class=EventSourceResponse,
            responses={200: {"description": "the job's events, then more as they happen",
                             "content": {"text/event-stream": {}}},
                       204: {"description": "the job is final and the client has every event"},
                       **problems(400, 401, 404, 422, 429, 503)})
async def events(opening: Annotated[_Opening, Depends(_opening)],
                 service: ServiceDep) -> AsyncIterator[ServerSentEvent]:
    async for event in _stream(service, opening):
        yield event
