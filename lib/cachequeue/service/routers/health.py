"""Liveness and readiness: two questions with two different answers (Q14).

`GET /healthz`: is this process alive and serving HTTP? It touches no database, so a
database outage never makes an orchestrator restart a healthy process (which would not
help and would drop every open stream). It also says how many event streams are open.

`GET /readyz`: should traffic come here? Only if the database answers the claim path
(connect, run the claim's first step read-only, commit) within the service's
ready_timeout; otherwise 503 with the reason, so a load balancer sends requests elsewhere
until it is back.
"""

from __future__ import annotations

from fastapi import APIRouter

from ..problems import Problem
from ..runtime import ServiceDep

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz(service: ServiceDep) -> dict:
    return {"status": "alive", "streams": service.hub.streams}


@router.get("/readyz")
async def readyz(service: ServiceDep) -> dict:
    reason = await service.ready()
    if reason is not None:
        raise Problem(503, "not_ready", f"the database is not usable: {reason}",
                      {"Retry-After": str(service.retry_after)})
    return {"status": "ready"}
