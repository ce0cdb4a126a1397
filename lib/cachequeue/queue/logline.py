"""The worker's log lines: one line per event, `<worker> <event> key=value ...`, and their parser.

The long-running worker writes one line per event (starting, ready, claimed, finished,
retrying, failed, rejected, lost, handed-back, abandoned, reconnecting, reconnected,
stopping, stopped; in the throughput mode one `prefetched` line per claim statement
instead of a `claimed` line per job) through the logger `cachequeue.worker`; the `cachequeue worker` command
sends them to stderr with a UTC timestamp in front. Values with spaces are JSON strings, so
`parse` can read a line back: supervisors (tests, notebooks, the chaos run) wait for events
by reading a worker's stderr instead of sleeping.

>>> log_line("w1", "claimed", job=7, attempt=1)
'w1 claimed job=7 attempt=1'
>>> parse("2026-01-01T00:00:00.000Z w1 failed job=7 error=\\"TimeoutError: slow\\"")
{'time': '2026-01-01T00:00:00.000Z', 'worker': 'w1', 'event': 'failed', 'job': 7, 'error': 'TimeoutError: slow'}
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from typing import Any

__all__ = ["LOGGER", "LineHandler", "flush_turn", "formatter", "info", "info_each", "log_line",
           "one_line", "parse"]

LOGGER = logging.getLogger("cachequeue.worker")

_PLAIN = re.compile(r"^[\w.,:/+-]+$")
_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')
_LINE = re.compile(r"^(?P<time>\d{4}-\d\d-\d\dT[\d:.]+Z) (?P<worker>\S+) (?P<event>[\w-]+)(?P<rest>.*)$")


def _value(value: Any) -> str:
    text = f"{value:.6g}" if isinstance(value, float) else str(value)
    return text if _PLAIN.match(text) else json.dumps(text, ensure_ascii=False)


def one_line(exc: BaseException, limit: int = 160) -> str:
    """'Type: first line of the message', at most `limit` characters, for one log line."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}".strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def log_line(worker: str, event: str, **fields: Any) -> str:
    """The message of one event: worker name, event, then key=value pairs in order."""
    return " ".join([worker, event, *(f"{key}={_value(value)}" for key, value in fields.items())])


def info(worker: str, event: str, **fields: Any) -> None:
    """Write one event through LOGGER at INFO, if INFO is enabled: `LOGGER.info(log_line(...))`
    without the caller look-up. `Logger.info` walks the stack for the file and line of every
    record (`findCaller`), which no formatter of ours prints; the profile of a worker showed
    that walk as the largest part of its logging (bench/worker_profile.py).

    When the only handler is the command's own `LineHandler` (nothing else listens: no
    filter, no other handler, no propagation), the line goes straight to it without a
    LogRecord, which was half of the cost of a line (4.6 of 6.4 µs; the throughput mode
    writes one `finished` line per job)."""
    direct = _direct()
    if direct is not None:
        direct.write_lines([log_line(worker, event, **fields)])
        return
    if LOGGER.isEnabledFor(logging.INFO):  # the line is built only if it is written
        LOGGER.handle(LOGGER.makeRecord(LOGGER.name, logging.INFO, "", 0,
                                        log_line(worker, event, **fields), (), None))


def info_each(worker: str, events: list[tuple[str, int, int]]) -> None:
    """`info(worker, event, job=job, attempt=attempt)` for each (event, job, attempt), in
    order. Where only the command's LineHandler listens, the lines are one string written
    at once: the answer to a completion statement of the throughput mode is a thousand
    `finished` lines, and a record each was a fifth of the worker's time."""
    direct = _direct()
    if direct is None:
        for event, job, attempt in events:
            info(worker, event, job=job, attempt=attempt)
        return
    if events:
        direct.write_lines([f"{worker} {event} job={job:d} attempt={attempt:d}"
                            for event, job, attempt in events])


def _direct() -> LineHandler | None:
    """LOGGER's only handler when it is a LineHandler that takes INFO and nothing else would
    see a record (no filters, no propagation): lines may then skip the LogRecord."""
    handlers = LOGGER.handlers
    if (len(handlers) == 1 and type(handlers[0]) is LineHandler and not LOGGER.propagate
            and not LOGGER.filters and not handlers[0].filters
            and LOGGER.isEnabledFor(logging.INFO) and handlers[0].level <= logging.INFO):
        return handlers[0]
    return None


def _read(text: str) -> Any:
    if text.startswith('"'):
        return json.loads(text)
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def parse(line: str) -> dict[str, Any] | None:
    """A formatted line as a dict (time, worker, event, then the fields), or None for a line
    that is not a worker event (a traceback, a warning)."""
    match = _LINE.match(line.rstrip("\n"))
    if match is None:
        return None
    found = {"time": match["time"], "worker": match["worker"], "event": match["event"]}
    for key, value in _FIELD.findall(match["rest"]):
        found[key] = _read(value)
    return found


class _UTCFormatter(logging.Formatter):
    converter = time.gmtime

    def __init__(self, fmt: str) -> None:
        super().__init__(fmt)
        self._second: int | None = None  # the second whose text _stamp holds
        self._stamp = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        # strftime once per second, not once per line (a worker of the throughput mode
        # writes thousands of lines a second); the handler's lock serialises format().
        return self.stamp(record.created, record.msecs)

    def stamp(self, created: float, msecs: float | None = None) -> str:
        """`created` (seconds since the epoch) as `YYYY-MM-DDTHH:MM:SS.mmmZ`."""
        second = int(created)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", self.converter(second))
            self._second = second
        if msecs is None:
            msecs = (created - second) * 1000
        return f"{self._stamp}.{int(msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.stack_info:  # the rare record with a traceback
            return super().format(record)
        return f"{self.formatTime(record)} {record.getMessage()}"


def formatter() -> logging.Formatter:
    """`<UTC time> <message>`: the format of the `cachequeue worker` command's stderr."""
    return _UTCFormatter("%(asctime)s %(message)s")


class LineHandler(logging.StreamHandler):
    """The commands' handler: one `<UTC time> <message>` line per record on `stream`.

    A thread that calls `flush()` owns the stream's buffer from then on: its lines wait for
    its next flush(), and the thread that flushes once per turn (the worker's loop, see
    `flush_turn`) writes a turn's lines in one write instead of one write each. A line from
    any other thread (a handler's `ctx.report`) is written at once, after the owner's
    earlier lines, so the order of the lines is the order of the events. Until some thread
    flushes, every line is written at once, as a plain StreamHandler writes it."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.setFormatter(formatter())
        self._owner: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._write(self.format(record) + "\n")
        except Exception:  # as StreamHandler.emit: report it on stderr, never raise
            self.handleError(record)

    def write_lines(self, messages: list[str]) -> None:
        """Write each message as a line with the time (one time for all) in front."""
        now = time.time()
        with self.lock:  # also serialises the formatter's per-second stamp
            stamp = self.formatter.stamp(now) + " "
            self._write(stamp + ("\n" + stamp).join(messages) + "\n")

    def _write(self, text: str) -> None:
        with self.lock:
            self.stream.write(text)
            if threading.get_ident() != self._owner:
                self.stream.flush()

    def flush(self) -> None:
        with self.lock:
            self._owner = threading.get_ident()
            if self.stream and hasattr(self.stream, "flush"):
                self.stream.flush()


def flush_turn() -> None:
    """Write what LOGGER's LineHandlers hold (the caller becomes their owner, see
    LineHandler): the worker's loop calls it at the end of every turn of the throughput mode."""
    for handler in LOGGER.handlers:
        if type(handler) is LineHandler:
            handler.flush()
