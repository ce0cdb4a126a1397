"""Real worker processes for the notebooks and the chaos run, watched through their log lines.

`Fleet(schema).start("w1", lease=2)` runs `python -m cachequeue worker ... --concurrency 1`
(one job at a time unless `concurrency=` says otherwise) as a child process and returns
once the worker logged `ready` (connected, registered, listening). A thread per child
reads its stderr, line by line, into `events`; `wait_for("started", job=7)` blocks until
such a line arrives (or raises TimeoutError with the last lines), so a notebook acts at
the exact moment a handler started, without sleeping. `kill()` (SIGKILL), `pause()` /
`resume()` (SIGSTOP / SIGCONT) and `terminate()` (SIGTERM) are recorded in `Fleet.marks`
with their wall-clock time, for the timeline plot. `excerpt("reconnecting")` shows a
worker's lines of some events with the paths in them made relative to the checkout (or
cut to their last name), so a committed output reads the same on every machine.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ...checks import check_seconds, check_text
from ...localserver import home
from ...queue.logline import parse

__all__ = ["Fleet", "WorkerProcess", "tidy_paths"]

EFFECT_HANDLERS_SPEC = "cachequeue.course.app.effects:EFFECT_HANDLERS"
CONCURRENCY = 1  # a fleet's workers run one job at a time unless told otherwise
_SIGNALS = {signal.SIGKILL: "SIGKILL", signal.SIGSTOP: "SIGSTOP", signal.SIGCONT: "SIGCONT",
            signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT"}


# An absolute path's folders (up to its last name), e.g. in an error about a socket.
_FOLDERS = re.compile(r'(?<![\w.:/])/(?:[^\s/"\\]+/)+')


def tidy_paths(text: str) -> str:
    """`text` with the checkout's folder (localserver.home()) left out of every path in it,
    and any other absolute path cut to its last name."""
    return _FOLDERS.sub("", text.replace(f"{home()}/", ""))


class Signals:
    """Signals to a child process, each recorded with its wall-clock time in `_marks` (a list
    the timeline plot reads, or None): the class that uses it sets `pid`, `name`, `_marks`."""

    pid: int
    name: str
    _marks: list[dict[str, Any]] | None

    def send(self, signum: int) -> datetime:
        """Send a signal; return (and record in the marks) when it was sent."""
        at = datetime.now(UTC)
        os.kill(self.pid, signum)
        if self._marks is not None:
            self._marks.append({"at": at, "worker": self.name,
                                "signal": _SIGNALS.get(signum, str(signum))})
        return at

    def kill(self) -> datetime:
        return self.send(signal.SIGKILL)

    def pause(self) -> datetime:
        return self.send(signal.SIGSTOP)

    def resume(self) -> datetime:
        return self.send(signal.SIGCONT)

    def terminate(self) -> datetime:
        return self.send(signal.SIGTERM)


class WorkerProcess(Signals):
    """One `cachequeue worker` child process and the events of its log."""

    def __init__(self, name: str, proc: subprocess.Popen, fleet: Fleet) -> None:
        self.name = name
        self.proc = proc
        self.pid = proc.pid
        self.lines: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._fleet = fleet
        self._marks = fleet.marks
        self._changed = fleet.changed  # one condition for the fleet: wait on any worker
        self._eof = False
        self._reader = threading.Thread(target=self._read, name=f"fleet-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                event = parse(line)
                if event is not None and event["worker"] == self.name:
                    self.events.append(event)
                self._changed.notify_all()
        with self._changed:  # end of file: the process has exited (or closed stderr)
            self._eof = True
            self._changed.notify_all()

    def find(self, event: str, *, after: int = 0,
             where: Callable[[dict[str, Any]], bool] | None = None,
             **fields: Any) -> list[dict[str, Any]]:
        """The events logged so far (from index `after` of `events` on) with this name,
        these field values, and for which `where(event)` is true if given."""
        with self._changed:
            return [e for e in self.events[after:]
                    if e["event"] == event and all(e.get(k) == v for k, v in fields.items())
                    and (where is None or where(e))]

    def wait_for(self, event: str, timeout: float = 60.0, *, after: int = 0,
                 where: Callable[[dict[str, Any]], bool] | None = None,
                 **fields: Any) -> dict[str, Any]:
        """Block until the worker logs such an event (see find; `after=len(w.events)`
        waits for a new one) and return the first; TimeoutError with its last lines if
        it does not come within `timeout` seconds or the process exits."""
        check_seconds(timeout, "timeout")

        def matching() -> list[dict[str, Any]]:
            return self.find(event, after=after, where=where, **fields)

        with self._changed:
            self._changed.wait_for(lambda: matching() or self._eof, timeout)
            matches = matching()
            if not matches:
                tail = "\n".join(self.lines[-15:])
                state = "exited" if self._eof else f"was silent for {timeout:g} s"
                raise TimeoutError(f"worker {self.name} {state} before logging {event} {fields};"
                                   f" its last lines:\n{tail}")
        return matches[0]

    def excerpt(self, *events: str) -> list[str]:
        """The lines logged so far whose event is one of `events`, paths tidied (tidy_paths)."""
        with self._changed:
            lines = list(self.lines)
        return [tidy_paths(line) for line in lines
                if (e := parse(line)) is not None and e["event"] in events]

    def wait(self, timeout: float = 60.0) -> int:
        """Wait for the process to exit; its exit status (-9 after SIGKILL)."""
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        return code

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def __repr__(self) -> str:
        return f"WorkerProcess({self.name}, pid={self.pid}, running={self.running})"


class Fleet:
    """Worker processes on one schema (and one server: `url`, else DATABASE_URL/embedded)."""

    def __init__(self, schema: str, *, url: str | None = None,
                 handlers: str = EFFECT_HANDLERS_SPEC) -> None:
        self.schema = check_text(schema, "schema")
        self.url = url
        self.handlers = handlers
        self.workers: dict[str, WorkerProcess] = {}
        self.marks: list[dict[str, Any]] = []
        self.changed = threading.Condition()  # notified on every line any worker logs
        # A notebook whose kernel is restarted mid-section must not leave workers behind.
        atexit.register(self.close)

    def command(self, name: str, **options: Any) -> list[str]:
        """The command line of worker `name`: options become flags (lease=2 -> --lease 2;
        listen=False -> --no-listen; batch=False -> --no-batch, each result finished in
        its own commit). `concurrency` is always passed, 1 unless given: the
        notebooks' timelines and crash experiments are about one job at a time per worker,
        whatever the command's own default (10)."""
        cmd = [sys.executable, "-m", "cachequeue", "worker", "--schema", self.schema,
               "--handlers", self.handlers, "--name", name]
        for key, value in {"concurrency": CONCURRENCY, **options}.items():
            if key == "listen":
                cmd += [] if value else ["--no-listen"]
            elif key == "batch" and value is False:
                cmd += ["--no-batch"]
            else:
                cmd += [f"--{key.replace('_', '-')}", str(value)]
        return cmd

    def start(self, name: str, *, timeout: float = 60.0, **options: Any) -> WorkerProcess:
        """Start worker `name` and return once it logged `ready`."""
        if name in self.workers and self.workers[name].running:
            raise ValueError(f"worker {name!r} is already running")
        env = dict(os.environ)
        if self.url is not None:
            env["DATABASE_URL"] = self.url
        proc = subprocess.Popen(self.command(name, **options), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=env)
        worker = self.workers[name] = WorkerProcess(name, proc, self)
        try:
            worker.wait_for("ready", timeout)
        except TimeoutError:
            proc.kill()
            worker.wait()
            raise
        return worker

    def close(self, timeout: float = 30.0) -> dict[str, int]:
        """Stop every worker still running (SIGKILL) and return each one's exit status."""
        for worker in self.workers.values():
            if worker.running:
                with contextlib.suppress(ProcessLookupError):  # it may exit meanwhile
                    os.kill(worker.pid, signal.SIGCONT)  # a paused process must be able to die
                    os.kill(worker.pid, signal.SIGKILL)
        return {name: w.wait(timeout) for name, w in self.workers.items()}

    def find(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        """The events of every worker of the fleet with this name and these fields."""
        with self.changed:
            return [e for w in self.workers.values() for e in w.find(event, **fields)]

    def wait_for(self, event: str, timeout: float = 60.0, **fields: Any) -> dict[str, Any]:
        """Block until any worker of the fleet logs such an event; return the first found."""
        check_seconds(timeout, "timeout")
        with self.changed:
            if not self.changed.wait_for(lambda: self.find(event, **fields), timeout):
                raise TimeoutError(f"no worker logged {event} {fields} within {timeout:g} s")
            return self.find(event, **fields)[0]

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
