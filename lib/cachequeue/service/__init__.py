"""The HTTP service for the job queue (FastAPI on uvicorn): production-shaped.

- `app`: `create_app(schema, authenticator, ...)` and the seams an application plugs into
  (its authenticator, routers, `can_read`, a static page); `begin_shutdown(app)`.
- `routers`: one per resource: `jobs` (POST /v1/jobs -> 202 with Location and Retry-After;
  GET /v1/jobs/{id}; GET /v1/jobs/{id}/events, server-sent events) and `health`
  (/healthz without the database, /readyz with it).
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

from . import app, auth, events, hub, operations, problems, requests, responses, runtime
from .app import begin_shutdown, create_app
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
    "events",
    "hub",
    "operations",
    "problems",
    "requests",
    "responses",
    "runtime",
]
