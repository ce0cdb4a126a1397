"""`create_app`: the FastAPI application of the job service.

    app = create_app("ch07", TokenTable({"t0k3n": Principal(tenant_id=1)}))
    uvicorn.run(app)          # or: cachequeue serve --schema ch07 --app myapp:factory

The service knows jobs, tenants and tokens, nothing of any particular application. An app
adds what it knows through the seams: `authenticator` (token -> Principal), `routers`
(its own resources, e.g. the course's documents), `can_read` (a finer rule for who may
see a job) and `static_dir` (a page served at `/`). The course builds its app this way
(`cachequeue.course.webapp.create_app`), so this part never imports the course.

Routers per resource (`routers.jobs`, `routers.health`, `routers.metrics`); the shared state (pool, hub,
settings) is the `runtime.Service` in `app.state.service`, opened and closed by the app's
lifespan.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from .auth import Authenticator
from .operations import CanRead
from .problems import install as install_problems
from .routers import health, jobs, metrics
from .runtime import Service

__all__ = ["begin_shutdown", "create_app"]


def create_app(schema: str, authenticator: Authenticator, *, url: str | None = None,
               routers: Iterable[APIRouter] = (), can_read: CanRead | None = None,
               static_dir: Path | None = None, title: str = "cachequeue service",
               **settings: Any) -> FastAPI:
    """The service for the queue in `schema` (db.schema_name rules; `url` picks a server
    other than DATABASE_URL/embedded). `settings` go to runtime.Service: pool_size,
    pool_timeout, ready_timeout, retry_after."""
    service = Service(schema, authenticator, url=url, can_read=can_read, **settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        service.open()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.close)

    # No /docs: Swagger UI would load its scripts from a CDN. /openapi.json describes the API.
    app = FastAPI(title=title, lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.service = service
    install_problems(app)
    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(jobs.router)
    for router in routers:
        app.include_router(router)
    if static_dir is not None:  # last: it answers every path no router took
        app.mount("/", StaticFiles(directory=Path(static_dir), html=True), name="page")
    return app


def begin_shutdown(app: Any) -> None:
    """Tell a service app that the server is stopping: its event streams end now, so the
    server need not wait for them (clients reconnect with Last-Event-ID). Signal-safe; does
    nothing for an app that is not a service."""
    service = getattr(getattr(app, "state", None), "service", None)
    if isinstance(service, Service):
        service.hub.close()
