"""GET /metrics: the queue's figures for Prometheus, read from the tables at each scrape.

No token: a scraper is infrastructure, not a tenant. Labels carry tenant ids (the busiest
`exporter.TOP_TENANTS`, the rest as "other") and never a document or a payload; serve the
route on an internal network only. A database that cannot be reached is 503, as elsewhere.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from ...queue import metrics
from ..exporter import CONTENT_TYPE, TOP_TENANTS, WINDOW, exposition
from ..runtime import ServiceDep

__all__ = ["router"]

router = APIRouter(tags=["metrics"])


@router.get("/metrics")
async def prometheus(service: ServiceDep) -> Response:
    figures = await service.call(metrics.snapshot, window=WINDOW, top=TOP_TENANTS)
    return Response(exposition(figures), media_type=CONTENT_TYPE)
