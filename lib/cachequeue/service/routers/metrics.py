"""GET /metrics on the operator listener: this process's series, and the queue's from one place.

Not on the public listener: the series carry tenant ids and per-tenant depth, so they are
for the operator, and a separate listener (`cachequeue serve --metrics-port P`, bound to
127.0.0.1 unless `--metrics-host` says otherwise) keeps them off the port that tenants
reach, with no credential to hand to Prometheus or to leak. `app.operator_app(app)` is the
ASGI app of that listener. Labels carry tenant ids (in gauges the busiest
`exporter.TOP_TENANTS`, in counters the Service's fixed `counter_tenants`; the rest as
"other") and never a document or a payload.

Every replica serves its own series (`exporter.ProcessMetrics`); the queue's
database-wide ones only where the Service has `queue_metrics` on, so that one place
exports them (see `exporter`). A database that cannot be reached is 503, as elsewhere.
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
    text = service.metrics.exposition()
    if service.queue_metrics:
        figures = await service.call(metrics.snapshot, window=WINDOW, top=TOP_TENANTS,
                                     counter_tenants=service.counter_tenants)
        text += exposition(figures)
    return Response(text, media_type=CONTENT_TYPE)
