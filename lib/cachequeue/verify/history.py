"""The history of a verify run: operations as JSON lines, and the final snapshot of the tables.

Every process of a run (the driver that submits, each worker, the nemesis) appends
operations to one file through a `Recorder`. An operation is one JSON object per line:

    {"process": "w2", "type": "invoke", "f": "finish", "call": "w2:17", "job": 5,
     "attempt": 2, "token": "…", "time": 1764620000.123}
    {"process": "w2", "type": "ok", "f": "finish", "call": "w2:17", "job": 5,
     "attempt": 2, "token": "…", "outcome": "accepted", "time": …}

`type` is Jepsen's: `invoke` when a call starts; `ok` (it answered: `outcome` accepted or
rejected), `fail` (it answered with an error and changed nothing) or `unknown` (the
connection broke before the answer: it may or may not have happened) when it ends; `info`
for what has no answer (a nemesis event, a handler's side effect, a worker's own verdict).
`f` names the operation: submit, claim, renew, effect, finish, fail, release, verdict, and
the nemesis's kill, pause, resume, terminate, restart, cut, delay, blackhole, heal.
`time` is the wall clock (seconds since the epoch) of the host that runs the server; where
the database clock matters the operation carries it (`from`/`until` of a claim's lease,
`db_before`/`db_after` around a renewal). The snapshot (`snapshot(conn)`) is the tables
at the end: it resolves every `unknown` (a result row names the lease token that wrote it).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from .. import sqlfile

__all__ = ["COMPLETIONS", "Recorder", "db_now", "read", "snapshot", "write"]

COMPLETIONS = ("ok", "fail", "unknown")
_QUERIES = sqlfile.load(__package__, "snapshot.sql")


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    if hasattr(value, "hex") and type(value).__name__ == "UUID":
        return str(value)
    return value


class Recorder:
    """Appends operations of one process to a history file (JSON lines, O_APPEND).

    Each line is written with one `os.write` on a file opened with O_APPEND, so lines of
    several processes never interleave (a line is far below PIPE_BUF). Thread-safe.
    `call()` returns a fresh call id, which links an invoke to its completion.
    """

    def __init__(self, path: str | os.PathLike, process: str) -> None:
        self.path = Path(path)
        self.process = process
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._calls = itertools.count(1)
        self._lock = threading.Lock()

    def call(self) -> str:
        with self._lock:
            return f"{self.process}:{next(self._calls)}"

    def op(self, type_: str, f: str, **fields: Any) -> dict[str, Any]:
        """Record one operation now; return it."""
        op = {"process": self.process, "type": type_, "f": f, "time": time.time()}
        op.update({k: _plain(v) for k, v in fields.items()})
        line = (json.dumps(op, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
        return op

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def read(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The operations of a history file, in the order they were written (a torn last line,
    from a process killed mid-write, is skipped)."""
    ops = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            ops.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return ops


def write(path: str | os.PathLike, ops: Iterable[dict[str, Any]]) -> None:
    """Write operations as a history file (for tests and saved failures)."""
    Path(path).write_text("".join(json.dumps(op) + "\n" for op in ops), encoding="utf-8")


def snapshot(conn: psycopg.Connection, *, effects: bool = True) -> dict[str, list[dict]]:
    """The queue's tables at the end of a run, as plain values (times in epoch seconds):
    jobs, attempts, results, the audit rows, and (with `effects`) the side-effect store and
    the recorded state changes out of a terminal state of `driver`'s tables."""
    names = ["jobs", "attempts", "results", "audit"] + (
        ["effects", "transitions"] if effects else [])
    found = {}
    with conn.cursor(row_factory=dict_row) as cur:
        for name in names:
            rows = cur.execute(_QUERIES[f"snapshot_{name}"].sql).fetchall()
            found[name] = [{k: _plain(v) for k, v in row.items()} for row in rows]
        found["now"] = _plain(cur.execute(_QUERIES["now"].sql).fetchone()["now"])
    return found


def db_now(conn: psycopg.Connection) -> float:
    """The database clock `cq_now()` now, in epoch seconds."""
    return conn.execute(_QUERIES["now"].sql).fetchone()[0].timestamp()
