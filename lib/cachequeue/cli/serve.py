"""`cachequeue serve`: the HTTP service on uvicorn, optionally with worker processes beside it.

    cachequeue serve --schema serve --app cachequeue.course.app.webapp:create_app \
                     --workers 2 --handlers cachequeue.course.app.summaries:SUMMARY_HANDLERS

`--app MODULE:ATTR` names a factory called as `factory(schema)` that returns the ASGI app
(`cachequeue.service.create_app` plus whatever the application adds). `--port 0` picks a
free port; the log line `service listening url=http://...` says which, once the app has
started, so a supervisor (a test, a notebook) waits for that line instead of sleeping.

`--demo` calls `factory(schema, demo=True)`: the app's demonstration routes (the course's
`/demo/users`, which hands out every sample user's token). Off by default; `make serve`
turns it on. `--metrics-port P` opens the operator listener (`--metrics-host`, default
127.0.0.1) with `GET /metrics`, which the public port does not serve; `--queue-metrics`
adds the queue's database-wide series there (give it to one process of a deployment, so
they are exported once; see `service.exporter`).

The service's own bounds, each overriding the app's setting when given: `--statement-timeout`
and `--lock-timeout` (seconds, every statement of the pool), and the per-tenant limits
`--submit-rate`/`--submit-burst` (submits per second, one bucket per tenant in the
database, shared by every process), `--max-pending` (pending jobs, in the database) and `--max-streams` (open event streams, per process),
each answered 429 with Retry-After; 0 turns a limit off (see `service.tenantlimits`).
`--limit-concurrency N` (default 1000) bounds the connections and tasks uvicorn serves at
once (503 past it), and every request head has a deadline (`cli.serving.BoundedH11Protocol`:
20 s from the connection's opening, keep-alive + 20 s after a response), so a client that
connects and sends nothing, or its headers a byte at a time, is closed; a request that has
begun (an event stream) is not. On a network with untrusted clients a reverse proxy in front
still does this better (buffering, TLS, per-client limits). The access log never shows a
query string (`cli.serving.RedactQuery`: a token sent in the URL stays out of it).

`--workers N` starts N `cachequeue worker` processes on the same schema and keeps them
running (see `cli.serving`: a worker that dies is started again, with a backoff), and
tells the service which kinds they run: a job of any other kind would wait forever, so
`POST /v1/jobs` refuses it (422 `no_worker_for_kind`). The workers' settings are checked
here by the worker's own rules (a `queue.Worker` is built and thrown away), so a setting
a worker would refuse is this command's usage error; a worker that still exits with a
usage error (2) is not restarted: the service stops, with status 2. The workers claim
fairly across tenants (`--fair`, on by default; `--no-fair` for oldest first), at most
`--tenant-cap` running jobs per tenant (default: half of the workers' slots,
workers x concurrency, at least 1), so one tenant's backlog cannot hold every slot. The workers run in their own
process group, so Ctrl-C in a terminal reaches this process only, and each signal it
gets is passed on exactly once: the first SIGINT or SIGTERM stops uvicorn gracefully, ends
the event streams (clients reconnect with Last-Event-ID) and sends SIGTERM to each worker
(stop claiming, finish or hand back within --shutdown-timeout); a second one forces
uvicorn out and sends the workers their second SIGTERM (hand back at once). On Linux a
worker also gets SIGTERM if this process dies without a word (SIGKILL), so none is left
behind. Exit status: 0 when everything stopped cleanly, 3 when a worker handed jobs back,
1 on an error, 2 for bad arguments (before anything is started, or a worker's own usage
error).
"""

from __future__ import annotations

import argparse
import inspect
import os
from collections.abc import Callable
from typing import Any

from .. import db
from ..errors import ConfigurationError
from ..queue import Worker
from .base import Command, UsageError, import_attribute
from .worker import CONCURRENCY, load_handlers

__all__ = ["COMMAND", "load_factory"]


def load_factory(spec: str) -> Callable[[str], Any]:
    """The callable named by "MODULE:ATTR"; UsageError with a one-line reason otherwise."""
    factory = import_attribute(spec, "app", "app")
    if not callable(factory):
        raise UsageError(f"{spec} must be a callable factory(schema) -> ASGI app")
    return factory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schema", required=True, help="the schema of the queue to serve")
    parser.add_argument("--app", required=True, metavar="MODULE:ATTR",
                        help="a factory(schema) returning the ASGI app")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000,
                        help="port to listen on (default 8000; 0 picks a free one)")
    parser.add_argument("--workers", type=int, default=0, metavar="N",
                        help="also run N `cachequeue worker` processes (default 0)")
    parser.add_argument("--handlers", default=None, metavar="MODULE:ATTR",
                        help="the workers' handlers (required with --workers)")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, metavar="N",
                        help=f"jobs each worker runs at once (default {CONCURRENCY}, as "
                             "`cachequeue worker`)")
    parser.add_argument("--fair", action=argparse.BooleanOptionalAction, default=True,
                        help="the workers claim fairly across tenants (default on)")
    parser.add_argument("--tenant-cap", type=int, default=None, metavar="N",
                        help="with --fair: at most N running jobs per tenant (default half "
                             "of workers x concurrency, at least 1)")
    parser.add_argument("--statement-timeout", type=float, default=None, metavar="S",
                        help="the bound of every statement of the service (default: the "
                             "app's, 10 s for service.create_app)")
    parser.add_argument("--lock-timeout", type=float, default=None, metavar="S",
                        help="the bound of every lock wait of the service (default: the "
                             "app's, 5 s for service.create_app)")
    parser.add_argument("--submit-rate", type=float, default=None, metavar="R",
                        help="per tenant: jobs submitted per second, then 429 (default: the "
                             "app's, 100 for service.create_app; 0: no limit)")
    parser.add_argument("--submit-burst", type=float, default=None, metavar="N",
                        help="per tenant: submits allowed at once (default: the app's, 200)")
    parser.add_argument("--max-pending", type=int, default=None, metavar="N",
                        help="per tenant: pending jobs, then 429 (default: the app's, 2000; "
                             "0: no limit)")
    parser.add_argument("--max-streams", type=int, default=None, metavar="N",
                        help="per tenant: open event streams, then 429 (default: the app's, "
                             "100; 0: no limit)")
    parser.add_argument("--shutdown-timeout", type=float, default=10.0, metavar="S",
                        help="after a signal, how long workers may finish before they hand "
                             "jobs back (default 10)")
    parser.add_argument("--limit-concurrency", type=int, default=1000, metavar="N",
                        help="connections and tasks at once before uvicorn answers 503 "
                             "(default 1000); slow clients are a reverse proxy's job")
    parser.add_argument("--no-access-log", dest="access_log", action="store_false",
                        help="do not log one line per request")
    parser.add_argument("--demo", action=argparse.BooleanOptionalAction, default=False,
                        help="serve the app's demonstration routes (factory(schema, demo=True))")
    parser.add_argument("--metrics-port", type=int, default=None, metavar="P",
                        help="serve GET /metrics on this port (the operator listener; 0: a "
                             "free one); the public port does not serve it")
    parser.add_argument("--metrics-host", default="127.0.0.1",
                        help="address of the operator listener (default 127.0.0.1)")
    parser.add_argument("--queue-metrics", action=argparse.BooleanOptionalAction,
                        default=False,
                        help="add the queue's database-wide series to /metrics (one process "
                             "of a deployment)")


def prepare(args: argparse.Namespace) -> Callable[[], int]:
    """Check every argument without touching the database; return the function that runs."""
    try:
        db.schema_name(args.schema)
        if os.environ.get("DATABASE_URL", "").strip():
            db.database_url()  # only parses the URL
    except (ValueError, ConfigurationError) as exc:
        raise UsageError(str(exc)) from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    if not 0 <= args.workers <= 32:
        raise UsageError(f"--workers must be 0..32, got {args.workers}")
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {args.concurrency}")
    if not 0 <= args.shutdown_timeout <= 3600:
        raise UsageError(f"--shutdown-timeout must be 0..3600 seconds, got {args.shutdown_timeout}")
    for option in ("statement_timeout", "lock_timeout"):
        value = getattr(args, option)
        if value is not None and not 0 < value <= 300:
            raise UsageError(f"--{option.replace('_', '-')} must be > 0 and <= 300 seconds, "
                             f"got {value}")
    limits = {"submit_rate": (0, 1e6), "submit_burst": (1, 1e6), "max_pending": (0, 10**9),
              "max_streams": (0, 100_000)}
    for option, (low, high) in limits.items():
        value = getattr(args, option)
        if value is not None and not low <= value <= high:  # NaN fails both
            raise UsageError(f"--{option.replace('_', '-')} must be {low:g}..{high:g}, "
                             f"got {value}")
    if not 1 <= args.limit_concurrency <= 100_000:
        raise UsageError(f"--limit-concurrency must be 1..100000, got {args.limit_concurrency}")
    if args.workers and not args.handlers:
        raise UsageError("--workers needs --handlers MODULE:ATTR")
    if args.handlers and not args.workers:
        raise UsageError("--handlers is for the workers; add --workers N")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise UsageError(f"--metrics-port must be 0..65535, got {args.metrics_port}")
    if args.metrics_port is not None and args.metrics_port != 0 and args.metrics_port == args.port:
        raise UsageError("--metrics-port must differ from --port")
    if args.queue_metrics and args.metrics_port is None:
        raise UsageError("--queue-metrics needs --metrics-port P (the operator listener)")
    # The workers would refuse a bad module; say so before starting. Their kinds are the
    # only ones the service can promise to run.
    args.worker_kinds = sorted(load_handlers(args.handlers)) if args.handlers else None
    if args.tenant_cap is not None and not args.fair:
        raise UsageError("--tenant-cap needs --fair (only the fair claim counts per tenant)")
    if args.workers and args.fair and args.tenant_cap is None:
        args.tenant_cap = max(1, args.workers * args.concurrency // 2)
    if args.workers:
        # The workers' own checks, here: a worker that refuses its settings exits 2, and
        # restarting it would not change its mind.
        try:
            Worker(lambda: None, load_handlers(args.handlers), concurrency=args.concurrency,
                   shutdown_timeout=args.shutdown_timeout, fair=args.fair,
                   tenant_cap=args.tenant_cap if args.fair else None)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"the workers would refuse: {exc}") from None
    factory = load_factory(args.app)
    if args.demo:
        try:
            inspect.signature(factory).bind(args.schema, demo=True)
        except (TypeError, ValueError):
            raise UsageError(f"--demo: {args.app} does not take demo=True") from None
    from . import serving  # uvicorn and the service: imported only by this command

    return lambda: serving.run(args, factory)


COMMAND = Command(
    name="serve",
    help="run the HTTP service (and, with --workers, worker processes) until SIGINT/SIGTERM",
    add_arguments=add_arguments,
    prepare=prepare,
)
