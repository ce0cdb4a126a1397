"""The HTTP service for the job queue (FastAPI on uvicorn): production-shaped.

- `app`: `create_app(schema, authenticator, ...)` and the seams an application plugs into
  (its authenticator, routers, `check_submit`, `can_read`, a static page);
  `operator_app(app)`, the operator listener's app (/metrics); `begin_shutdown(app)`.
- `routers`: one per resource: `jobs` (POST /v1/jobs -> 202 with Location and Retry-After;
  GET /v1/jobs/{id}; GET /v1/jobs/{id}/events, server-sent events), `health`
  (/healthz without the database, /readyz with it), `metrics` (operator listener) and
  `page` (an app's files).
- `edge`: what every request meets (the body cap, OPTIONS, request counts); `docs`: the
  OpenAPI description of bodies and errors; `exporter`: the Prometheus text.
- `auth`: bearer tokens (`Principal`, `TokenTable`, constant-time comparison).
- `requests`: checks of bodies and headers; `operations`: submit, access, status,
  readiness as functions of a connection; `responses`: the 202 and status shapes;
  `problems`: every error as application/problem+json.
- `events`: a job's history as numbered events, derived from the queue's tables;
  `hub`: one LISTEN connection per process fanned out to every stream;
  `runtime`: the `Service` (settings, psycopg_pool connection pool, hub).

This part imports the ground floor and `cachequeue.queue`; never `cachequeue.course`. The
command `cachequeue serve` (in `cachequeue.cli`) runs an app built on it.
"""

from . import (
    app,
    auth,
    docs,
    edge,
    events,
    exporter,
    hub,
    operations,
    problems,
    requests,
    responses,
    runtime,
)
from .app import begin_shutdown, create_app, operator_app
from .auth import Principal, TokenTable
from .problems import Problem
from .runtime import Service

__all__ = [
    "Principal",
    "Problem",
    "Service",
    "TokenTable",
    "app",
    "auth",
    "begin_shutdown",
    "create_app",
    "docs",
    "edge",
    "events",
    "exporter",
    "hub",
    "operations",
    "operator_app",
    "problems",
    "requests",
    "responses",
    "runtime",
]
