"""The running part of `cachequeue serve` (see `cli.serve`): uvicorn, the workers, the signals.

Imported only when `serve` runs, so `cachequeue worker` does not pay for FastAPI's import.

**Supervision.** `Supervisor` keeps the `--workers` processes running. A worker that exits
while the service is not stopping (SIGKILL, the OOM killer, a crash) is started again
under the same name (the workers table keeps one row per name), after a backoff of 1 s
that doubles with every exit in a row that came less than STABLE_SECONDS after its start,
up to 30 s, so a worker that cannot start does not spin. Each exit and start is a log line
(`worker-exited name= pid= code= restart_in=`, `worker-started name= pid=`) and counts in
the operator listener's `cq_worker_restarts_total`; `cq_workers_running` says how many run.

Restarting, not failing readiness, is the answer chosen for one dead worker: /readyz tells
a load balancer whether *this HTTP process* can take requests, and it can: the request is
persisted whoever runs it later, and the jobs the dead worker held come back when their
lease expires. Failing readiness would take a working API out of service for a fault it
cannot mend, while the supervisor mends it within seconds. Only when *no* worker of this
process runs does /readyz answer 503 (`no worker process is running`): the jobs it would
accept would wait for a restart at best. A worker that keeps dying shows as restarts in the
log and the metric; the jobs it cannot run end failed after their attempts, as with any
worker.

A worker that exits with status 2 (a usage error: it refused its arguments, its handlers'
module failed to import) is not restarted: it would refuse them again, for ever. The
supervisor logs `worker-refused` and stops the whole command (exit status 2).

**The operator listener.** With `--metrics-port`, uvicorn serves two sockets; `Listeners`
sends each request to the app of the socket it arrived on (the port of `scope["server"]`):
the operator app (`service.operator_app`, /metrics) or the public app.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from uvicorn.protocols.http.h11_impl import H11Protocol

from .. import db, queue
from ..queue.logline import formatter, log_line, one_line
from ..service import Service, begin_shutdown, operator_app
from ..service.runtime import LOGGER
from .base import EXIT_HANDED_BACK, EXIT_USAGE

__all__ = ["HEADER_SECONDS", "STABLE_SECONDS", "BoundedH11Protocol", "Listeners", "RedactQuery",
           "Supervisor", "access_log_config", "listen_socket", "restart_delay", "run"]

_NAME = "service"  # the name in this command's log lines (as a worker's name is in its own)
STABLE_SECONDS = 60.0  # a worker that ran this long before it exited starts again after 1 s
_BACKOFF_CAP = 30.0


# An idle keep-alive connection is closed by the client first (httpx's pool after 5 s, a
# reverse proxy after its idle timeout, typically 60 s), never by us: a server that closes
# first races the client's next request on that connection, which then fails with
# "connection reset by peer" (uvicorn's own default is 5 s, the same as httpx's).
KEEP_ALIVE_SECONDS = 75


# How long a connection may take to send a whole request head: from its opening, and from
# the end of its previous response plus the keep-alive time (KEEP_ALIVE_SECONDS).
HEADER_SECONDS = 20.0


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for every request head. uvicorn arms its
    keep-alive timer only after a response and cancels it on every byte received, so a
    connection that never sends a request, or sends its headers a byte at a time
    (slowloris), was held for as long as the client liked. Here a connection that has not
    completed a request head HEADER_SECONDS after it opened, or KEEP_ALIVE_SECONDS +
    HEADER_SECONDS after its last response, is closed. A request that has begun (an event
    stream, a slow upload) is not affected: the deadline is for the head only."""

    header_seconds = HEADER_SECONDS

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._arm_head_deadline(self.header_seconds)

    def _arm_head_deadline(self, seconds: float) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(seconds, self._head_too_slow)

    def _cancel_head_deadline(self) -> None:
        deadline = getattr(self, "_head_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before:  # a request head arrived: its body and answer may take long
            self._cancel_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None
                                                or self.cycle.response_complete):
            self._arm_head_deadline(self.timeout_keep_alive + self.header_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound TCP socket for uvicorn (`port` 0: a free one). Made with proto=IPPROTO_TCP,
    not socket.create_server's 0: asyncio sets TCP_NODELAY on accepted connections only
    then, and without it every response written in two parts (headers, body) waits for
    the client's delayed ACK, about 40 ms on Linux."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


class RedactQuery(logging.Filter):
    """Drop the query string from uvicorn's access log lines: a client that puts a token
    in the URL (`?access_token=...`) must not find it in the log. The path stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) \
                and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0] + "?[redacted]", *args[3:])
        return True


def access_log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with every line on stderr, as the workers' (uvicorn
    sends its access log to stdout), and the access lines' query strings redacted."""
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    log_config.setdefault("filters", {})["redact_query"] = {"()": RedactQuery}
    log_config["handlers"]["access"]["filters"] = ["redact_query"]
    return log_config


def restart_delay(quick_exits: int) -> float:
    """Seconds before a worker starts again after `quick_exits` exits in a row (>= 1) that
    each came less than STABLE_SECONDS after its start: 1, 2, 4, 8, 16, 30, 30, ..."""
    return min(_BACKOFF_CAP, 2.0 ** (max(1, quick_exits) - 1))


def _die_with_parent() -> None:  # pragma: no cover (runs in the child before exec)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Supervisor:
    """The worker processes of `serve --workers N`, restarted when they die (see above)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._prefix = f"{args.schema}-{os.getpid()}"
        self._lock = threading.Lock()  # guards procs and stopping together
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.procs: list[subprocess.Popen] = []
        self.restarts = 0
        self.refused = False  # a worker exited with a usage error: not restarted
        self.on_fatal: Callable[[], None] = lambda: None  # called once, from a watch thread

    def _spawn(self, i: int) -> subprocess.Popen:
        args, name = self._args, f"{self._prefix}-w{i + 1}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "cachequeue", "worker", "--schema", args.schema,
             "--handlers", args.handlers, "--name", name,
             "--concurrency", str(args.concurrency),
             "--shutdown-timeout", str(args.shutdown_timeout),
             *_fairness(args)],
            stdin=subprocess.DEVNULL, process_group=0, preexec_fn=_die_with_parent)
        LOGGER.info(log_line(_NAME, "worker-started", name=name, pid=proc.pid))
        return proc

    def start(self) -> None:
        with self._lock:
            self.procs = [self._spawn(i) for i in range(self._args.workers)]
        for i in range(len(self.procs)):
            thread = threading.Thread(target=self._watch, args=(i,), daemon=True,
                                      name=f"supervise-w{i + 1}")
            thread.start()
            self._threads.append(thread)

    def _watch(self, i: int) -> None:
        quick_exits = 0
        while True:
            proc, started = self.procs[i], time.monotonic()
            code = proc.wait()
            if self._stopping.is_set():
                return
            if code == EXIT_USAGE:  # it refused its settings: it would again, for ever
                LOGGER.error(log_line(_NAME, "worker-refused", name=f"{self._prefix}-w{i + 1}",
                                      pid=proc.pid, code=code))
                with self._lock:
                    first, self.refused = not self.refused, True
                if first:
                    self.on_fatal()
                return
            quick_exits = quick_exits + 1 if time.monotonic() - started < STABLE_SECONDS else 1
            delay = restart_delay(quick_exits)
            LOGGER.warning(log_line(_NAME, "worker-exited", name=f"{self._prefix}-w{i + 1}",
                                    pid=proc.pid, code=code, restart_in=delay))
            if self._stopping.wait(delay):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                self.procs[i] = self._spawn(i)
                self.restarts += 1

    def signal_all(self, signum: int) -> None:
        """Stop restarting, and send `signum` to every worker still running."""
        with self._lock:
            self._stopping.set()
            procs = list(self.procs)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    def wait(self) -> list[int]:
        """Stop restarting; wait for every worker to exit; their exit statuses."""
        with self._lock:
            self._stopping.set()
            procs = list(self.procs)
        codes = [proc.wait() for proc in procs]
        for thread in self._threads:
            thread.join(5)
        return codes

    @property
    def running(self) -> int:
        return sum(proc.poll() is None for proc in list(self.procs))

    def collect(self) -> Iterator[Metric]:
        """The supervisor's series on the operator listener."""
        yield GaugeMetricFamily("cq_workers_running", "Worker processes of this service running.",
                                value=self.running)
        yield CounterMetricFamily("cq_worker_restarts", "Workers started again after they died.",
                                  value=self.restarts)


def _fairness(args: argparse.Namespace) -> list[str]:
    """The worker's --fair/--tenant-cap arguments for serve's settings (cli.serve)."""
    if not getattr(args, "fair", False):
        return []
    cap = getattr(args, "tenant_cap", None)
    return ["--fair"] + ([] if cap is None else ["--tenant-cap", str(cap)])


class Listeners:
    """One ASGI app for two sockets: requests that arrived on `operator_port` go to
    `operator`, every other request and the lifespan to `public`."""

    def __init__(self, public: Any, operator: Any, operator_port: int) -> None:
        self.public, self.operator, self.operator_port = public, operator, operator_port
        self.state = public.state  # begin_shutdown finds the Service here

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        server = scope.get("server") or (None, None)
        if scope["type"] != "lifespan" and server[1] == self.operator_port:
            await self.operator(scope, receive, send)
        else:
            await self.public(scope, receive, send)


class _Server(uvicorn.Server):
    """uvicorn, with this command's own signal handling (see cli.serve's docstring)."""

    def __init__(self, config: uvicorn.Config, workers: Supervisor | None) -> None:
        super().__init__(config)
        self.workers = workers
        self.url = ""
        self.metrics_url = ""

    def stop_for_worker(self) -> None:
        """A worker refused its settings (Supervisor.on_fatal): stop as on a first signal."""
        LOGGER.error(log_line(_NAME, "stopping", reason="a worker refused its settings"))
        begin_shutdown(self.config.app)
        if self.workers is not None:
            self.workers.signal_all(signal.SIGTERM)
        self.should_exit = True

    def handle_exit(self, sig: int, frame: object) -> None:
        # Not uvicorn's: it would re-raise the signal after shutdown. Flags and kill() only.
        LOGGER.info(log_line(_NAME, "stopping", signal=signal.Signals(sig).name,
                             again=self.should_exit))
        begin_shutdown(self.config.app)
        if self.workers is not None:
            self.workers.signal_all(signal.SIGTERM)
        if self.should_exit:
            self.force_exit = True
        self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            extra = {"metrics_url": self.metrics_url} if self.metrics_url else {}
            workers = 0 if self.workers is None else len(self.workers.procs)
            LOGGER.info(log_line(_NAME, "listening", url=self.url, pid=os.getpid(),
                                 workers=workers, **extra))


def _build(args: argparse.Namespace, factory: Callable[..., Any]) -> Any:
    app = factory(args.schema, demo=True) if args.demo else factory(args.schema)
    service = getattr(getattr(app, "state", None), "service", None)
    if isinstance(service, Service):
        service.configure(queue_metrics=args.queue_metrics, worker_kinds=args.worker_kinds,
                          statement_timeout=getattr(args, "statement_timeout", None),
                          lock_timeout=getattr(args, "lock_timeout", None),
                          **{option: getattr(args, option, None) for option in
                             ("submit_rate", "submit_burst", "max_pending", "max_streams")})
    elif args.metrics_port is not None:
        raise TypeError(f"--metrics-port: {args.app} did not build a service.create_app app")
    return app


def run(args: argparse.Namespace, factory: Callable[..., Any]) -> int:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter())
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False
    sockets: list[socket.socket] = []
    try:
        # The ports first: one in use is found before the factory creates a schema.
        sockets.append(listen_socket(args.host, args.port))
        if args.metrics_port is not None:
            sockets.append(listen_socket(args.metrics_host, args.metrics_port))
        app = _build(args, factory)
        # The queue the service submits to: created if the app's factory has not (once),
        # accepting the kinds its workers handle (a new queue accepts none).
        with db.connect(args.schema) as conn:
            queue.install(conn)
            if args.worker_kinds:
                queue.kinds.register(conn, dict.fromkeys(args.worker_kinds,
                                                         f"handled by {args.handlers}"))
    except Exception as exc:  # a broken app, an unreachable database, a port in use
        LOGGER.error(log_line(_NAME, "error", error=one_line(exc)))
        for sock in sockets:
            sock.close()
        return 1
    host, port = sockets[0].getsockname()[:2]
    if len(sockets) == 2:
        metrics_host, metrics_port = sockets[1].getsockname()[:2]
        app = Listeners(app, operator_app(app), metrics_port)
    config = uvicorn.Config(app, access_log=args.access_log, timeout_graceful_shutdown=10,
                            timeout_keep_alive=KEEP_ALIVE_SECONDS, log_level="info",
                            log_config=access_log_config(),
                            limit_concurrency=args.limit_concurrency,
                            http=BoundedH11Protocol)
    workers = Supervisor(args) if args.workers else None
    server = _Server(config, workers)
    if workers is not None:
        service = getattr(getattr(app, "state", None), "service", None)
        if isinstance(service, Service):
            service.metrics.register([workers])
            service.configure(workers_running=lambda: workers.running)
        workers.on_fatal = server.stop_for_worker
        workers.start()
    server.url = f"http://{host}:{port}"
    if len(sockets) == 2:
        server.metrics_url = f"http://{metrics_host}:{metrics_port}"
    try:
        server.run(sockets=sockets)
    finally:
        codes = []
        if workers is not None:
            if not server.should_exit:  # uvicorn failed to start: the workers stop too
                workers.signal_all(signal.SIGTERM)
            codes = workers.wait()
        for sock in sockets:
            sock.close()
    restarts = 0 if workers is None else workers.restarts
    LOGGER.info(log_line(_NAME, "stopped", workers=",".join(map(str, codes)) or "none",
                         restarts=restarts))
    if workers is not None and workers.refused:
        return EXIT_USAGE
    if any(code == EXIT_HANDED_BACK for code in codes) and all(c in (0, 3) for c in codes):
        return EXIT_HANDED_BACK
    return 0 if all(code == 0 for code in codes) and server.started else 1
