"""`cachequeue scheduler`: enqueue the schedules' fire times of one schema until SIGTERM.

    cachequeue scheduler --schema ch14 [--interval 5] [--name s1]
    cachequeue scheduler --schema ch14 --once [--clock 2026-03-29T01:00:00Z]

Run as many as you like, on as many machines: each fire time is enqueued once whoever
ticks (`queue.schedules`: a unique key per schedule and fire time, no leader). Each pass
(`schedules.tick`) reads the database clock and every schedule and enqueues what is due;
then the scheduler waits `--interval` seconds (default 5). A schedule is missed only if NO
scheduler passes during a fire time's window (its catch-up policy). A lost connection (the
server restarted) is one log line; the next pass connects again.

`--once`: one pass, then exit (cron or a test can run it). `--clock INSTANT` freezes this
scheduler's database clock at INSTANT (an ISO 8601 time with its offset): a hook for tests
and demonstrations, as `cachequeue.now` is, with `--once` only.

One log line per event goes to stderr (`<UTC time> <scheduler> <event> key=value ...`,
the workers' format, `queue.logline`): `fired` per fire time enqueued. Exit status 0 when
stopped by a signal or after `--once`, 1 when `--once` could not reach the database, 2 for
bad arguments.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from datetime import datetime

from .. import db
from ..errors import ConfigurationError
from ..queue import schedules
from ..queue.logline import LOGGER, formatter, log_line, one_line
from ..queue.notify import CONNECTION_ERRORS
from .base import Command, UsageError

__all__ = ["COMMAND", "INTERVAL"]

INTERVAL = 5.0  # seconds between passes
MAX_INTERVAL = 3600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schema", required=True, help="the schema whose schedules to fire")
    parser.add_argument("--interval", type=float, default=INTERVAL, metavar="S",
                        help=f"seconds between passes (default {INTERVAL:g}; a fire time is "
                             f"missed only if no scheduler passes within its window)")
    parser.add_argument("--name", default=None, metavar="N",
                        help="the scheduler's name in schedule_fires (default host-pid)")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    parser.add_argument("--clock", default=None, metavar="INSTANT",
                        help="with --once: freeze the database clock at INSTANT (ISO 8601 "
                             "with offset), for tests and demonstrations")


def prepare(args: argparse.Namespace) -> Callable[[], int]:
    """Check every argument without touching the database; return the function that runs."""
    try:
        db.schema_name(args.schema)
        if os.environ.get("DATABASE_URL", "").strip():
            db.database_url()
    except (ValueError, ConfigurationError) as exc:
        raise UsageError(str(exc)) from None
    if not (0 < args.interval <= MAX_INTERVAL):
        raise UsageError(f"--interval must be above 0 and at most {MAX_INTERVAL:g} seconds, "
                         f"got {args.interval:g}")
    name = args.name or f"{socket.gethostname()}-{os.getpid()}"
    if not name.isprintable() or not name.strip() or len(name) > schedules.MAX_SCHEDULER_CHARS:
        raise UsageError(f"--name must be printable, non-empty and at most "
                         f"{schedules.MAX_SCHEDULER_CHARS} characters")
    clock = None
    if args.clock is not None:
        if not args.once:
            raise UsageError("--clock freezes the clock of one pass: use it with --once")
        try:
            clock = datetime.fromisoformat(args.clock)
        except ValueError:
            raise UsageError(f"--clock must be an ISO 8601 time, got {args.clock!r}") from None
        if clock.tzinfo is None:
            raise UsageError(f"--clock must carry its offset (e.g. Z or +01:00), "
                             f"got {args.clock!r}")
    return lambda: _run(args.schema, name, args.interval, args.once, clock)


def _pass(conn, name: str) -> int:
    fired = schedules.tick(conn, scheduler=name)
    for fire in fired:
        LOGGER.info(log_line(name, "fired", schedule=fire.name,
                             fire_at=fire.fire_at.isoformat(), job=fire.job_id))
    return len(fired)


def _run(schema: str, name: str, interval: float, once: bool, clock: datetime | None) -> int:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter())
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False
    if once:
        try:
            with db.connect(schema) as conn:
                if clock is not None:
                    db.set_clock(conn, clock.isoformat())
                _pass(conn, name)
        except CONNECTION_ERRORS as exc:
            LOGGER.error(log_line(name, "error", error=one_line(exc)))
            return 1
        return 0
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    LOGGER.info(log_line(name, "started", schema=schema, interval=interval))
    conn = None
    while not stop.is_set():
        try:
            if conn is None or conn.closed:
                conn = db.connect(schema)
            _pass(conn, name)
        except CONNECTION_ERRORS as exc:  # the server restarted, or is not up yet
            LOGGER.warning(log_line(name, "disconnected", error=one_line(exc)))
            if conn is not None:
                conn.close()
            conn = None
        stop.wait(interval)
    if conn is not None:
        conn.close()
    LOGGER.info(log_line(name, "stopped"))
    return 0


COMMAND = Command(
    name="scheduler",
    help="enqueue the fire times of a schema's schedules, each once however many run",
    add_arguments=add_arguments,
    prepare=prepare,
)
