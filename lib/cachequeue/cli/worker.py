"""`cachequeue worker`: run a `queue.Worker` in this process until SIGTERM or SIGINT.

    cachequeue worker --schema ch06 --handlers myapp.jobs:HANDLERS --concurrency 4
    cachequeue worker --broker nats --schema ch13 --handlers myapp.jobs:HANDLERS

`--broker nats` takes the jobs from NATS JetStream instead (`cli.broker_worker`, chapter 13).

`--concurrency` defaults to 10 (CONCURRENCY): up to ten jobs per claim statement and ten
handlers at once; pass `--concurrency 1` for one job at a time.

`--handlers MODULE:ATTR` names an importable mapping {kind: callable}. The database is
DATABASE_URL, else the embedded server, as everywhere in the course; `--schema` is a chapter
name (CACHEQUEUE_SCHEMA_SUFFIX applies, as in `db.connect`). One log line per event goes to
stderr (`<UTC time> <worker> <event> key=value ...`, see `queue.logline`).

Signals are handled here, at the edge, and nowhere else: the first SIGTERM or SIGINT calls
`Worker.stop()` (stop claiming; running jobs get --shutdown-timeout seconds, then are
handed back), a second one calls `Worker.stop_now()` (hand back at once). Exit status 0
when the worker stopped with nothing handed back, 3 when it handed jobs back (or had to
leave them to lease expiry), 1 on an unexpected error, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .. import db
from ..errors import ConfigurationError
from ..queue import Worker, kinds
from ..queue.logline import LOGGER, LineHandler, log_line, one_line
from ..queue.prefetch import MAX_PREFETCH
from ..queue.worker import BATCH, BATCH_WAIT
from .base import EXIT_HANDED_BACK, Command, UsageError, import_attribute

__all__ = ["COMMAND", "CONCURRENCY", "load_handlers"]

# The command's default --concurrency (the Worker class itself defaults to 1). Ten: a free
# slot is filled by one claim statement for up to ten jobs, which is what lets the default
# worker keep up with pgqueuer's default (batch_size=10) in bench/worker_throughput.py;
# peers' defaults: pgqueuer 10 per dequeue, Sidekiq 7 five threads, procrastinate 1, River
# none (every queue must set MaxWorkers, 1 to 10,000).
CONCURRENCY = 10


def load_handlers(spec: str) -> Mapping[str, Callable[..., Any]]:
    """The mapping named by "MODULE:ATTR" (e.g. "cachequeue.course.app.effects:EFFECT_HANDLERS");
    UsageError, with a one-line reason, when it cannot be imported or is not a mapping."""
    handlers = import_attribute(spec, "handlers", "handler")
    if not isinstance(handlers, Mapping):
        raise UsageError(f"{spec} must be a mapping {{kind: callable}}, "
                         f"got {type(handlers).__name__}")
    if not all(isinstance(kind, str) for kind in handlers):
        raise UsageError(f"{spec} must map kind names (str) to callables; a key is not a str")
    return handlers


def _kinds(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",")]
    if not all(kinds):
        raise argparse.ArgumentTypeError(f"a comma-separated list of kinds, got {text!r}")
    return kinds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", choices=("postgres", "nats"), default="postgres",
                        help="where the jobs come from: the schema's PostgreSQL queue "
                             "(default) or its NATS JetStream stream (NATS_URL, else the "
                             "embedded nats-server)")
    parser.add_argument("--max-attempts", type=int, default=3, metavar="N",
                        help="with --broker nats: deliveries per job (max_deliver; default 3)")
    parser.add_argument("--replicas", type=int, default=1, metavar="R",
                        help="with --broker nats: the stream's replicas if it is created (default 1)")
    parser.add_argument("--schema", required=True, help="the chapter schema whose jobs to run")
    parser.add_argument("--handlers", required=True, metavar="MODULE:ATTR",
                        help="an importable mapping {kind: callable(payload[, ctx])}")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, metavar="N",
                        help=f"jobs run at once, each in its own thread; up to N are claimed "
                             f"by one statement (default {CONCURRENCY}, as pgqueuer claims 10 "
                             f"per statement; Sidekiq runs 5 threads, procrastinate 1, River "
                             f"has no default. 1 is measurably slower: bench/worker_throughput.py)")
    parser.add_argument("--lease", type=float, default=30.0, metavar="S",
                        help="seconds a claim holds a job unless renewed (default 30)")
    parser.add_argument("--poll", type=float, default=None, metavar="S",
                        help="look for work at least this often (default 10, or 1 with "
                             "--no-listen; expired leases and due retries are found this way)")
    parser.add_argument("--heartbeat", type=float, default=None, metavar="S",
                        help="seconds between lease renewals (default lease/3, less than "
                             "lease/2 if given; 0 = never, for demonstrations)")
    parser.add_argument("--shutdown-timeout", type=float, default=30.0, metavar="S",
                        help="after SIGTERM, how long running jobs may take before they are "
                             "handed back (default 30)")
    parser.add_argument("--kinds", type=_kinds, default=None, metavar="A,B",
                        help="claim only these kinds (default: every kind in --handlers)")
    parser.add_argument("--name", default=None, metavar="W",
                        help="the worker's name in the workers table (default host-pid)")
    parser.add_argument("--no-listen", dest="listen", action="store_false",
                        help="do not LISTEN for new jobs: find them by polling only")
    parser.add_argument("--batch", type=int, default=None, metavar="N",
                        help=f"finish up to N successful jobs in one statement, each checked "
                             f"against its own lease (default {BATCH})")
    parser.add_argument("--batch-wait", type=float, default=None, metavar="S",
                        help=f"flush the waiting successes after S seconds at the latest "
                             f"(default {BATCH_WAIT:g})")
    parser.add_argument("--no-batch", dest="no_batch", action="store_true",
                        help="finish every job in its own durable commit (= --batch 1; "
                             "not with --batch or --batch-wait)")
    parser.add_argument("--prefetch", type=int, default=0, metavar="N",
                        help=f"the throughput mode: claim up to N jobs ahead into a local queue "
                             f"(leases renewed while they wait, handed back at once on stop; "
                             f"0 = off, the default; at most {MAX_PREFETCH})")
    parser.add_argument("--fair", action="store_true",
                        help="claim fairly across tenants (fewest running first)")
    parser.add_argument("--tenant-cap", type=int, default=None, metavar="N",
                        help="with --fair: at most N running jobs per tenant")


def prepare(args: argparse.Namespace) -> Callable[[], int]:
    """Check every argument without touching the database; return the function that runs."""
    if args.name is not None and not args.name.isprintable():
        # One event per log line: a newline in the name would split it in two.
        raise UsageError("--name must be printable: no newline, tab or control character")
    if args.broker == "nats":
        from . import broker_worker

        return broker_worker.prepare(args, load_handlers, _run)
    if args.max_attempts != 3 or args.replicas != 1:
        raise UsageError("--max-attempts and --replicas are options of --broker nats "
                         "(the PostgreSQL queue's attempts are each job's max_attempts)")
    try:
        db.schema_name(args.schema)  # the same check db.connect makes
        if os.environ.get("DATABASE_URL", "").strip():
            db.database_url()  # only parses the URL; the embedded server is not started here
    except (ValueError, ConfigurationError) as exc:
        raise UsageError(str(exc)) from None
    if args.no_batch and (args.batch is not None or args.batch_wait is not None):
        raise UsageError("--no-batch finishes every job alone; it does not go with --batch "
                         "or --batch-wait")
    batch = 1 if args.no_batch else BATCH if args.batch is None else args.batch
    batch_wait = BATCH_WAIT if args.batch_wait is None else args.batch_wait
    handlers = load_handlers(args.handlers)
    try:
        worker = Worker(lambda: db.connect(args.schema), handlers, name=args.name,
                        concurrency=args.concurrency, lease=args.lease, poll=args.poll,
                        heartbeat=args.heartbeat, shutdown_timeout=args.shutdown_timeout,
                        kinds=args.kinds, listen=args.listen, fair=args.fair,
                        tenant_cap=args.tenant_cap, batch=batch,
                        batch_wait=batch_wait, prefetch=args.prefetch)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return lambda: _register(args.schema, handlers, args.handlers) or _run(worker)


def _register(schema: str, handlers: Mapping[str, Any], spec: str) -> None:
    """Register the handlers' kinds in the schema's queue, so that jobs of them may be
    submitted (a new queue accepts none). A failure (no database yet, no queue in the
    schema) is one line on stderr, and the worker starts anyway: it reconnects on its own."""
    if not handlers:
        return
    try:
        with db.connect(schema) as conn:
            kinds.register(conn, dict.fromkeys(handlers, f"handled by {spec}"))
    except Exception as exc:
        print(f"cachequeue worker: the kinds of {spec} were not registered in schema "
              f"{schema!r}: {one_line(exc)}", file=sys.stderr)


def _run(worker: Worker, start_errors: tuple[type[BaseException], ...] = (),
         start_status: int = 1) -> int:
    """Run `worker` with the signals wired; an error in `start_errors` (a broker that cannot
    be reached) is one line and `start_status`."""
    # A buffered stream of its own (sys.stderr writes at every newline): the throughput
    # mode's loop writes a turn's lines at once (logline.LineHandler); lines from other
    # threads, and every line of the other modes, are still written as they come.
    try:
        stream = open(sys.stderr.fileno(), "w", buffering=1 << 16, encoding="utf-8",  # noqa: SIM115
                      errors="backslashreplace", closefd=False)
    except (AttributeError, OSError, ValueError):  # a stderr with no file behind it (a test's)
        stream = sys.stderr
    handler = LineHandler(stream)
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False

    def on_signal(signum: int, frame: object) -> None:
        # Only flags and a byte to a socket: safe whatever the main thread was doing.
        if worker.stopping:
            worker.stop_now()
        else:
            worker.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    try:
        stats = worker.run()
    except start_errors as exc:
        print(f"cachequeue worker: {exc}", file=sys.stderr)
        return start_status
    except Exception as exc:  # a bug or a broken schema: say it in one line and exit 1
        LOGGER.error(log_line(worker.name, "error", error=one_line(exc)))
        return 1
    return EXIT_HANDED_BACK if stats.get("released") or stats.get("abandoned") else 0


COMMAND = Command(
    name="worker",
    help="run jobs of one schema until SIGTERM (graceful) or a second signal (hand back now)",
    add_arguments=add_arguments,
    prepare=prepare,
)

