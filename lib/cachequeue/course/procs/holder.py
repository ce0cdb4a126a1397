"""What the server sees of a holder that died and of one that was paused: a session lock against a lease.

`python -m cachequeue.course.procs.holder --schema ch06 --kind noop --lease 3` is a stand-in
for a worker: it claims one job (`jobs.claim`, a lease of `--lease` seconds), takes a
session advisory lock on it (`sql/holder.sql`, key: the schema and the job id), prints one
JSON line and then does nothing, as a handler stuck in a long computation would. `start()`
runs it as a child process and returns a `Holder` once the line arrived.

From another session, `wait_for_lock(conn, job_id, timeout)` waits (on the lock itself,
under a lock_timeout, no polling) until the lock is free and says after how many seconds,
or None if it was still held after `timeout`. `backend_state` reads the holder's server
process in pg_stat_activity and `lease_left` the job's lease on the database clock.

What it shows: after SIGKILL the operating system closes the process's socket, the
server's backend reads end-of-file, exits and drops every session lock, within
milliseconds, while the lease still holds the job. After SIGSTOP the socket stays open, the
backend waits idle, and the lock stays held for as long as the pause lasts: only the lease
runs out.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any

import psycopg

from ... import sqlfile
from ...checks import check_int, check_seconds, check_text
from .fleet import Signals

__all__ = ["Holder", "backend_state", "lease_left", "main", "start", "wait_for_lock"]

_QUERIES = sqlfile.load(__package__, "holder.sql")


class Holder(Signals):
    """The child process, the job it holds and its server process (`backend`)."""

    def __init__(self, name: str, proc: subprocess.Popen, ready: dict[str, Any],
                 marks: list | None) -> None:
        self.name = name
        self.proc = proc
        self.pid = proc.pid
        self.job_id: int = ready["job_id"]
        self.attempt: int = ready["attempt"]
        self.backend: int = ready["backend"]
        self._marks = marks

    def wait(self, timeout: float = 60.0) -> int:
        return self.proc.wait(timeout)

    def close(self) -> int:
        """End the process (SIGCONT, then SIGKILL, quietly) and return its exit status."""
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGCONT)
            os.kill(self.pid, signal.SIGKILL)
        code = self.proc.wait(60)
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.proc.stdin.close()
        return code

    def __repr__(self) -> str:
        return f"Holder({self.name}, pid={self.pid}, job={self.job_id}, backend={self.backend})"


def start(schema: str, *, name: str, kind: str = "noop", lease: float = 3.0,
          url: str | None = None, marks: list | None = None, timeout: float = 60.0) -> Holder:
    """Run a holder as a child process; return once it claimed a job and holds its lock.

    `url` picks the server (else DATABASE_URL or the embedded one); signals sent through
    the Holder are appended to `marks` (a `Fleet.marks` list, for the timeline). If the
    child exits or stays silent for `timeout` seconds, RuntimeError says why.
    """
    cmd = [sys.executable, "-m", "cachequeue.course.procs.holder", "--schema",
           check_text(schema, "schema"), "--name", check_text(name, "name"),
           "--kind", check_text(kind, "kind"), "--lease", repr(check_seconds(lease, "lease"))]
    env = dict(os.environ)
    if url is not None:
        env["DATABASE_URL"] = url
    # stdin stays open and unread: the child blocks on it, and exits if we go away.
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    ready, _, _ = select.select([proc.stdout], [], [], check_seconds(timeout, "timeout"))
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"holder {name} did not start (exit {proc.returncode}): {err.strip()}")
    return Holder(name, proc, json.loads(line), marks)


def wait_for_lock(conn: psycopg.Connection, job_id: int, timeout: float) -> float | None:
    """Wait until this session can take the job's advisory lock; the seconds it waited,
    or None if the lock was still held after `timeout` seconds. The lock is released again.

    The wait is the server's own (pg_advisory_lock under a lock_timeout): the call returns
    the moment the holder's session lets go, without polling.
    """
    params = {"job_id": check_int(job_id, "job_id"),
              "ms": max(1, round(check_seconds(timeout, "timeout") * 1000))}
    began = time.monotonic()
    try:
        with conn.transaction():
            conn.execute(_QUERIES["lock_timeout"].sql, params)
            conn.execute(_QUERIES["take_lock"].sql, params)
    except psycopg.errors.LockNotAvailable:
        return None
    waited = time.monotonic() - began
    conn.execute(_QUERIES["unlock"].sql, params)
    return waited


def backend_state(conn: psycopg.Connection, backend: int) -> str | None:
    """The state of a server process in pg_stat_activity ('idle', 'active', ...), or None
    once it has exited."""
    row = conn.execute(_QUERIES["backend"].sql, {"pid": check_int(backend, "backend")}).fetchone()
    return None if row is None else row[0]


def lease_left(conn: psycopg.Connection, job_id: int) -> float | None:
    """Seconds until the job's lease runs out on the database clock (negative once it has;
    None when the job holds no lease)."""
    row = conn.execute(_QUERIES["lease_left"].sql, {"job_id": check_int(job_id, "job_id")}).fetchone()
    return None if row is None else row[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--kind", default="noop")
    parser.add_argument("--lease", type=float, default=3.0)
    args = parser.parse_args(argv)
    from ... import db
    from ...queue import jobs

    conn = db.connect(args.schema)
    claim = jobs.claim(conn, lease=args.lease, kinds=[args.kind], worker=args.name)
    if claim is None:
        print(f"holder {args.name}: no {args.kind} job to claim", file=sys.stderr)
        return 1
    backend = conn.execute(_QUERIES["take_lock"].sql, {"job_id": claim.job_id}).fetchone()[1]
    print(json.dumps({"pid": os.getpid(), "backend": backend, "job_id": claim.job_id,
                      "attempt": claim.attempt}), flush=True)
    sys.stdin.read()  # hold both until killed (or until the parent closes our stdin)
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
