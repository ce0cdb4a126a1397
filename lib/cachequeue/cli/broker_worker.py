"""`cachequeue worker --broker nats`: the worker with its jobs from NATS JetStream.

    cachequeue worker --broker nats --schema ch13 --handlers myapp.jobs:HANDLERS --concurrency 4

The same handlers, schema, concurrency, lease, heartbeat, name and shutdown options as the
PostgreSQL worker (`cli.worker`); the jobs come from the schema's stream (`broker.streams`),
the results go to the schema's fenced tables (`broker.fence`). The broker is NATS_URL, else
the embedded nats-server (`make db`). Options that only the PostgreSQL queue has
(--kinds, --no-listen, --batch, --fair, --tenant-cap) are refused.

Exit status: 2 (one line on stderr) for bad arguments and for a broker that cannot be
reached at start-up; otherwise as `cachequeue worker`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from .. import db, embedded_nats
from ..errors import ConfigurationError, NatsUnavailable
from ..queue.retry import RetryPolicy
from .base import EXIT_USAGE, UsageError

__all__ = ["prepare"]

_POSTGRES_ONLY = {"kinds": None, "listen": True, "fair": False, "tenant_cap": None,
                  "batch": None, "batch_wait": None, "no_batch": False}


def prepare(args: argparse.Namespace, load_handlers: Callable, run: Callable) -> Callable[[], int]:
    """Check every argument without touching the database or the broker; the function that
    runs the worker (`run(worker, on_start_error)`, shared with the PostgreSQL worker)."""
    from ..broker import BrokerWorker

    for option, default in _POSTGRES_ONLY.items():
        if getattr(args, option) != default:
            flag = {"listen": "no-listen"}.get(option, option.replace("_", "-"))
            raise UsageError(f"--{flag} is an option of the PostgreSQL queue, not of --broker nats")
    try:
        db.schema_name(args.schema)
        if os.environ.get("DATABASE_URL", "").strip():
            db.database_url()
        if os.environ.get("NATS_URL", "").strip():
            embedded_nats.nats_url()  # only checks the form; nothing is started
    except (ValueError, ConfigurationError) as exc:
        raise UsageError(str(exc)) from None
    handlers = load_handlers(args.handlers)
    try:
        worker = BrokerWorker(args.schema, handlers, name=args.name,
                              concurrency=args.concurrency, lease=args.lease,
                              heartbeat=args.heartbeat, poll=args.poll or 1.0,
                              shutdown_timeout=args.shutdown_timeout,
                              retry=RetryPolicy(max_attempts=args.max_attempts),
                              replicas=args.replicas)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return lambda: run(worker, (NatsUnavailable,), EXIT_USAGE)
