"""/v1/jobs: submit (202), status (200, from the jobs table), events (server-sent events).

    POST /v1/jobs                 {"kind", "payload", "max_attempts"?, "run_after"?}
                                  [Idempotency-Key: ...] -> 202, Location, Retry-After
    GET  /v1/jobs/{id}            -> {id, state, attempts, last_error, output, ...}
    GET  /v1/jobs/{id}/events     [Last-Event-ID: n] -> text/event-stream, events n+1, ...

Every route needs a bearer token; a job of another tenant is a 404 on all of them. The
route functions only read the request and shape the answer: the checks are in
`requests`, the decisions in `operations`, the history in `events`.

An event stream subscribes to its job in the process's `Hub`, sends the events after
Last-Event-ID, then sleeps until the hub wakes it and reads again; it ends when the job is
final (done, failed, cancelled) or the server is stopping. A client that reconnects to a
final job with nothing new gets 204 No Content, which tells a browser's EventSource to
stop reconnecting. A client that disconnects is noticed at once (Starlette listens for
it); its subscription is dropped in `finally`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Path, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException

from ..auth import Caller, Principal
from ..events import History, history
from ..operations import job_status, readable, submit_job
from ..requests import idempotency_key, last_event_id, parse_job_request, read_body
from ..responses import accepted, retry_after_for, status_response
from ..runtime import Service, ServiceDep

__all__ = ["RECONNECT_MS", "router"]

RECONNECT_MS = 1000  # the `retry:` field: how long an EventSource waits before reconnecting
JobId = Annotated[int, Path(ge=1, le=2**63 - 1)]

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.post("", status_code=202)
async def submit(request: Request, principal: Caller,
                 service: ServiceDep,
                 idempotency_key_header: Annotated[str | None, Header(alias="Idempotency-Key")] = None):
    job = parse_job_request(await read_body(request))
    job_id, state = await service.call(submit_job, principal, job,
                                       idempotency_key(idempotency_key_header))
    return accepted(job_id, state=state,
                    retry_after=retry_after_for(service.retry_after, job.run_after))


@router.get("/{job_id}")
async def status(job_id: JobId, principal: Caller,
                 service: ServiceDep):
    found = await service.call(job_status, principal, job_id, service.can_read)
    return status_response(found, retry_after=service.retry_after)


@dataclass(frozen=True)
class _Opening:
    tenant_id: int
    job_id: int
    after: int
    first: History
    version: int  # the hub's version before `first` was read


def _open(conn, principal: Principal, job_id: int, after: int, can_read) -> History:
    readable(conn, principal, job_id, can_read)
    return history(conn, tenant_id=principal.tenant_id, job_id=job_id, after=after)


async def _opening(job_id: JobId, principal: Caller,
                   service: ServiceDep,
                   last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
                   ) -> _Opening:
    """Checks made before the stream starts, while a status code can still be chosen."""
    after = last_event_id(last_event_id_header)
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
    sub = hub.subscribe(job_id)
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
            batch = await service.call(history, tenant_id=opening.tenant_id, job_id=job_id,
                                       after=after)
    finally:
        hub.unsubscribe(sub)


@router.get("/{job_id}/events", response_class=EventSourceResponse)
async def events(opening: Annotated[_Opening, Depends(_opening)],
                 service: ServiceDep) -> AsyncIterator[ServerSentEvent]:
    async for event in _stream(service, opening):
        yield event
