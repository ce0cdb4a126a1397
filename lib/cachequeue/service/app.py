"""`create_app`: the FastAPI application of the job service, and its operator listener's app.

    app = create_app("ch07", TokenTable({"t0k3n": Principal(tenant_id=1)}))
    uvicorn.run(app)          # or: cachequeue serve --schema ch07 --app myapp:factory

The service knows jobs, tenants and tokens, nothing of any particular application. An app
adds what it knows through the seams: `authenticator` (token -> Principal), `routers`
(its own resources, e.g. the course's documents), `check_submit` (refuse a job the caller
may not ask for, before it is written), `can_read` (a finer rule for who may see a job)
and `static_dir` (a page served at `/`). The course builds its app this way
(`cachequeue.course.app.webapp.create_app`), so this part never imports the course.

Routers per resource (`routers.jobs`, `routers.health`, `routers.page`); the shared state
(pool, hub, settings, this process's counts) is the `runtime.Service` in
`app.state.service`, opened and closed by the app's lifespan. Every request passes
`edge.Edge` first (the body cap of every route, OPTIONS, the request counts).

`/metrics` is not on this app: `operator_app(app)` is a second, tiny app on the same
Service (`routers.metrics`), for a listener of its own that only the operator's network
reaches (`cachequeue serve --metrics-port`). It has no lifespan: the public app's opens
and closes the Service they share, so serve both from one server (cli.serving does).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse

from .auth import Authenticator
from .docs import with_kinds
from .edge import Edge
from .operations import CanRead, CheckSubmit, registered_kinds
from .problems import install as install_problems
from .requests import MAX_BODY_BYTES
from .routers import health, jobs, metrics, page
from .runtime import Service

__all__ = ["begin_shutdown", "create_app", "operator_app"]


def create_app(schema: str, authenticator: Authenticator, *, url: str | None = None,
               routers: Iterable[APIRouter] = (), can_read: CanRead | None = None,
               check_submit: CheckSubmit | None = None, static_dir: Path | None = None,
               title: str = "cachequeue service", **settings: Any) -> FastAPI:
    """The service for the queue in `schema` (db.schema_name rules; `url` picks a server
    other than DATABASE_URL/embedded). `settings` go to runtime.Service: pool_size,
    pool_timeout, ready_timeout, retry_after, max_in_flight, queue_metrics, worker_kinds,
    statement_timeout, lock_timeout."""
    service = Service(schema, authenticator, url=url, can_read=can_read,
                      check_submit=check_submit, **settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        service.open()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.close)

    # No /docs: Swagger UI would load its scripts from a CDN. /openapi.json describes the API,
    # with the kinds a job may name now (read from the queue: not FastAPI's cached document).
    app = FastAPI(title=title, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.service = service
    install_problems(app)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document() -> JSONResponse:
        kinds = (sorted(service.worker_kinds) if service.worker_kinds is not None
                 else await service.call(registered_kinds))
        return JSONResponse(with_kinds(app.openapi(), kinds))
    app.include_router(health.router)
    app.include_router(jobs.router)
    for router in routers:
        app.include_router(router)
    if static_dir is not None:
        app.include_router(page.page_router(static_dir))
    app.add_middleware(Edge, router=app.router, limit=MAX_BODY_BYTES, metrics=service.metrics)
    return app


def operator_app(app: FastAPI) -> FastAPI:
    """The app of the operator listener: GET /metrics (and /healthz) on `app`'s Service."""
    service = app.state.service
    if not isinstance(service, Service):
        raise TypeError("operator_app needs an app made by service.create_app")
    operator = FastAPI(title="cachequeue operator", docs_url=None, redoc_url=None,
                       openapi_url=None)
    operator.state.service = service
    install_problems(operator)
    operator.include_router(metrics.router)
    operator.add_api_route("/healthz", health.healthz, methods=["GET"])
    operator.add_middleware(Edge, router=operator.router, limit=0)
    return operator


def begin_shutdown(app: Any) -> None:
    """Tell a service app that the server is stopping: its event streams end now, so the
    server need not wait for them (clients reconnect with Last-Event-ID). Signal-safe; does
    nothing for an app that is not a service."""
    service = getattr(getattr(app, "state", None), "service", None)
    if isinstance(service, Service):
        service.hub.close()
