"""Liveness and readiness: two questions with two different answers (Q14).

`GET /healthz`: is this process alive and serving HTTP? It touches no database, so a
database outage never makes an orchestrator restart a healthy process (which would not
help and would drop every open stream). It also says how many event streams are open.

`GET /readyz`: should traffic come here? Only if claims and commits would succeed now,
proven read-only within the service's ready_timeout (`operations.check_ready` says what
it checks: a connection, the claim index readable without waiting on a lock, no lock that
stops claims, a server that takes writes), and, in a process that supervises workers
(`cachequeue serve --workers N`), while at least one of them runs; otherwise 503 with the
reason, so a load balancer sends requests elsewhere until it is back. A probe writes
nothing, so probing every second costs no transaction id, no row lock and no WAL.
"""

from __future__ import annotations

from fastapi import APIRouter

from ..docs import problems
from ..problems import Problem
from ..runtime import ServiceDep

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz(service: ServiceDep) -> dict:
    return {"status": "alive", "streams": service.hub.streams}


@router.get("/readyz", responses=problems(503))
async def readyz(service: ServiceDep) -> dict:
    if service.workers_missing():  # cachequeue serve --workers: none of them runs
        raise Problem(503, "not_ready", "no worker process of this service is running",
                      {"Retry-After": str(service.retry_after)})
    reason = await service.ready()
    if reason is not None:
        raise Problem(503, "not_ready", f"the database is not usable: {reason}",
                      {"Retry-After": str(service.retry_after)})
    return {"status": "ready"}
