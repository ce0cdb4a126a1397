"""The HTTP service as a real child process, beside worker processes: for notebooks, tests, benchmarks.

`Stack(schema)` is a `fleet.Fleet` (worker processes, watched through their log lines)
that can also start the service: `stack.start_api()` runs `python -m cachequeue serve
--port 0 ...` and returns once the service logged `listening`, with the port it got in
`api.url` (and the operator listener's, with `metrics_port=0`, in `api.metrics_url`).
Nothing is guessed and nothing sleeps: the service binds the port itself and
says which one. `stop_api()` sends SIGINT, as Ctrl-C would, and returns the exit status;
`close()` stops the service that way and kills the workers, as `Fleet.close` does.
`listen_sessions(conn)` counts the LISTEN connections on the schema's jobs channel. On
Linux the service gets SIGINT if the process that started it dies first (a notebook
kernel that is killed), so it never outlives its notebook.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Any

import psycopg

from ... import sqlfile
from ...checks import check_seconds
from ...queue import notify
from .fleet import Fleet, WorkerProcess

__all__ = ["APP", "SUMMARY_HANDLERS_SPEC", "ApiProcess", "Stack", "listen_sessions"]

APP = "cachequeue.course.app.webapp:create_app"
SUMMARY_HANDLERS_SPEC = "cachequeue.course.app.summaries:SUMMARY_HANDLERS"
_QUERIES = sqlfile.load("cachequeue.course.app", "webapp.sql")


def listen_sessions(conn: psycopg.Connection) -> int:
    """How many sessions wait on LISTEN on the jobs channel of the connection's schema: those
    whose last statement was that LISTEN. Each service process holds one, however many event
    streams it serves; a worker listens on the connection it claims with, whose last
    statement is a claim, so it is not counted here."""
    return conn.execute(_QUERIES["listen_sessions"].sql,
                        {"channel": notify.channel(conn)}).fetchone()[0]


def _die_with_parent() -> None:  # runs in the child, before exec
    if sys.platform.startswith("linux"):  # SIGINT, as Ctrl-C, if this process dies first
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG


class ApiProcess(WorkerProcess):
    """The `cachequeue serve` child: its log events (`listening`, `stopping`, ...) and URL."""

    @property
    def url(self) -> str:
        """The base URL, e.g. 'http://127.0.0.1:40217' (from the `listening` line)."""
        return self.wait_for("listening", timeout=1)["url"]

    @property
    def metrics_url(self) -> str | None:
        """The operator listener's base URL (started with `metrics_port=0`), else None."""
        return self.wait_for("listening", timeout=1).get("metrics_url")


class Stack(Fleet):
    """Worker processes (see Fleet) and the HTTP service, on one schema and one server."""

    def __init__(self, schema: str, *, url: str | None = None, handlers: str = SUMMARY_HANDLERS_SPEC,
                 app: str = APP) -> None:
        super().__init__(schema, url=url, handlers=handlers)
        self.app = app
        self.api: ApiProcess | None = None

    def api_command(self, **options: Any) -> list[str]:
        """The service's command line; options become flags (access_log=False ->
        --no-access-log, demo=True -> --demo, workers=2 -> --workers 2)."""
        cmd = [sys.executable, "-m", "cachequeue", "serve", "--schema", self.schema,
               "--app", self.app, "--port", "0"]
        for key, value in options.items():
            flag = key.replace("_", "-")
            if key == "access_log":
                cmd += [] if value else ["--no-access-log"]
            elif isinstance(value, bool):
                cmd += [f"--{flag}" if value else f"--no-{flag}"]
            else:
                cmd += [f"--{flag}", str(value)]
        return cmd

    def start_api(self, *, timeout: float = 60.0, env: dict[str, str] | None = None,
                  **options: Any) -> ApiProcess:
        """Start the service and return once it listens (its URL in `.url`)."""
        check_seconds(timeout, "timeout")
        if self.api is not None and self.api.running:
            raise ValueError("the service is already running; stop_api() first")
        environment = dict(os.environ if env is None else env)
        if self.url is not None:
            environment["DATABASE_URL"] = self.url
        proc = subprocess.Popen(self.api_command(**options), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=environment, preexec_fn=_die_with_parent)
        self.api = ApiProcess("service", proc, self)
        try:
            self.api.wait_for("listening", timeout)
        except TimeoutError:
            proc.kill()
            self.api.wait()
            raise
        return self.api

    def stop_api(self, timeout: float = 30.0) -> int | None:
        """SIGINT the service (as Ctrl-C), wait for it; its exit status (None: not started)."""
        if self.api is None:
            return None
        if self.api.running:
            self.api.send(signal.SIGINT)
        try:
            return self.api.wait(timeout)
        except subprocess.TimeoutExpired:
            self.api.proc.kill()
            return self.api.wait(timeout)

    def close(self, timeout: float = 30.0) -> dict[str, int]:
        codes = {}
        if self.api is not None:
            codes["service"] = self.stop_api(timeout)
        return codes | super().close(timeout)
