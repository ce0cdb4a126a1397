"""The running part of `cachequeue serve` (see `cli.serve`): uvicorn, the workers, the signals.

Imported only when `serve` runs, so `cachequeue worker` does not pay for FastAPI's import.
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import uvicorn

from ..queue.logline import formatter, log_line
from ..queue.notify import one_line
from ..service import begin_shutdown
from ..service.runtime import LOGGER
from .base import EXIT_HANDED_BACK

__all__ = ["listen_socket", "run"]

_NAME = "service"  # the name in this command's log lines (as a worker's name is in its own)


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


def _die_with_parent() -> None:  # pragma: no cover (runs in the child before exec)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _start_workers(args: argparse.Namespace) -> list[subprocess.Popen]:
    prefix = f"{args.schema}-{os.getpid()}"
    return [subprocess.Popen(
        [sys.executable, "-m", "cachequeue", "worker", "--schema", args.schema,
         "--handlers", args.handlers, "--name", f"{prefix}-w{i}",
         "--concurrency", str(args.concurrency),
         "--shutdown-timeout", str(args.shutdown_timeout)],
        stdin=subprocess.DEVNULL, process_group=0, preexec_fn=_die_with_parent)
        for i in range(1, args.workers + 1)]


class _Server(uvicorn.Server):
    """uvicorn, with this command's own signal handling (see the module docstring)."""

    def __init__(self, config: uvicorn.Config, workers: list[subprocess.Popen]) -> None:
        super().__init__(config)
        self.workers = workers
        self.url = ""

    def handle_exit(self, sig: int, frame: object) -> None:
        # Not uvicorn's: it would re-raise the signal after shutdown. Flags and kill() only.
        LOGGER.info(log_line(_NAME, "stopping", signal=signal.Signals(sig).name,
                             again=self.should_exit))
        begin_shutdown(self.config.app)
        for proc in self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        if self.should_exit:
            self.force_exit = True
        self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            LOGGER.info(log_line(_NAME, "listening", url=self.url, pid=os.getpid(),
                                 workers=len(self.workers)))


def run(args: argparse.Namespace, factory: Callable[[str], Any]) -> int:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter())
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False
    try:
        app = factory(args.schema)
        sock = listen_socket(args.host, args.port)
    except Exception as exc:  # a broken app, an unreachable database, a port in use
        LOGGER.error(log_line(_NAME, "error", error=one_line(exc)))
        return 1
    host, port = sock.getsockname()[:2]
    # Every log line on stderr, as the workers' (uvicorn sends its access log to stdout).
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    config = uvicorn.Config(app, access_log=args.access_log, timeout_graceful_shutdown=10,
                            log_level="info", log_config=log_config)
    server = _Server(config, _start_workers(args) if args.workers else [])
    server.url = f"http://{host}:{port}"
    try:
        server.run(sockets=[sock])
    finally:
        for proc in server.workers:  # uvicorn failed to start: the workers stop too
            if proc.poll() is None and not server.should_exit:
                proc.send_signal(signal.SIGTERM)
        codes = [proc.wait() for proc in server.workers]
        sock.close()
    LOGGER.info(log_line(_NAME, "stopped", workers=",".join(map(str, codes)) or "none"))
    if any(code == EXIT_HANDED_BACK for code in codes) and all(c in (0, 3) for c in codes):
        return EXIT_HANDED_BACK
    return 0 if all(code == 0 for code in codes) and server.started else 1
