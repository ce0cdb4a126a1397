"""The outbox lab: a relay process killed between publishing and marking, and a consumer.

`RelayProcess("ch09", hold_after=2, now=instant).start()` runs `python -m
cachequeue.course.procs.relaylab`: a relay (`queue.outbox.relay_once`) whose database clock
is frozen at `now` (so its lease on the events ends at a known instant), that publishes to
the stand-in broker (the table `broker_messages`, written on its own autocommit connection,
so a send is acknowledged at once) and, after its `hold_after`-th send, prints `holding`
and waits: the events claimed, nothing marked, and no transaction open on its outbox
connection (`session(conn, relay.pid)` reads that from pg_stat_activity).
`wait_for("holding")` returns at that exact moment; `kill()` sends SIGKILL, so the marks
are never written. A relay started before the lease ends finds nothing to take; one
started after it publishes those events again; `consume` drops the duplicates by event id
(the inbox).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ... import db, sqlfile
from ...checks import check_instance, check_int, check_seconds, check_text
from ...queue import jobs, outbox

__all__ = ["Broker", "Died", "RelayProcess", "clear", "commit_then_send", "consume", "install",
           "messages", "session"]

_QUERIES = sqlfile.load(__package__, "relaylab.sql")


def install(conn: psycopg.Connection) -> None:
    """The outbox and inbox tables, and the broker's message log."""
    outbox.install(conn)
    conn.execute(_QUERIES["install"].sql)


def clear(conn: psycopg.Connection) -> None:
    """Empty the outbox, the inbox and the broker's log."""
    conn.execute(_QUERIES["clear"].sql)


class Broker:
    """Sends messages on its own autocommit connection: a send, once returned, is kept."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def publish(self, event: outbox.Event) -> None:
        self._conn.execute(_QUERIES["send"].sql, {"event_id": event.event_id, "topic": event.topic,
                                                  "payload": json.dumps(event.payload)})


class Died(Exception):
    """The process died at this point (what `commit_then_send(..., die=True)` raises)."""


def commit_then_send(conn: psycopg.Connection, broker: Broker, *, n: int, die: bool) -> int:
    """The other order of the dual write, without an outbox: submit a job (it commits at
    once), then send its event to `broker`. With `die`, the process dies between the two
    (raises `Died` after the commit): the job exists and nothing anywhere says an event is
    owed. Returns the job's id (with `die`, it is the `Died` error's only argument)."""
    check_int(n, "n")
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})  # committed here
    if die:
        raise Died(job_id)
    broker.publish(outbox.Event(0, uuid.uuid4(), "job.submitted", {"job_id": job_id, "n": n}))
    return job_id


def messages(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every message the broker accepted, in order: seq, event_id, topic, payload."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_QUERIES["messages"].sql).fetchall()


def session(conn: psycopg.Connection, pid: int) -> dict[str, Any]:
    """How the server sees another session now (pg_stat_activity): its `state` ('idle',
    'active', 'idle in transaction', ...) and `xact_start` (None with no transaction open)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_QUERIES["session"].sql, {"pid": check_int(pid, "pid")}).fetchone()


def consume(conn: psycopg.Connection, handle: Callable[[dict[str, Any]], None]) -> dict[str, int]:
    """Read every broker message once; handle each new event id, drop duplicates.

    The inbox row and whatever `handle` writes on `conn` commit together, so a consumer
    that dies mid-message handles it again (and only then) on its next run.
    """
    counts = {"delivered": 0, "handled": 0, "duplicates": 0}
    for message in messages(conn):
        counts["delivered"] += 1
        event = outbox.Event(message["seq"], message["event_id"], message["topic"],
                             message["payload"])
        with conn.transaction():
            if outbox.accept(conn, event):
                handle(message["payload"])
                counts["handled"] += 1
            else:
                counts["duplicates"] += 1
    return counts


class RelayProcess:
    """One relay child process; its stdout lines are read by a thread into `lines`.

    `now` freezes the relay's database clock at that instant (None: the real clock);
    `lease` is how long its claim on the events lasts (seconds of that clock)."""

    def __init__(self, schema: str, *, hold_after: int | None = None,
                 now: datetime | None = None, lease: float = 30.0) -> None:
        self.schema = check_text(schema, "schema")
        self.hold_after = None if hold_after is None else check_int(hold_after, "hold_after",
                                                                    minimum=1)
        self.now = None if now is None else check_instance(now, "now", datetime)
        self.lease = check_seconds(lease, "lease")
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.proc: subprocess.Popen | None = None

    def start(self) -> RelayProcess:
        cmd = [sys.executable, "-m", "cachequeue.course.procs.relaylab", "--schema", self.schema,
               "--lease", repr(self.lease)]
        if self.hold_after is not None:
            cmd += ["--hold-after", str(self.hold_after)]
        if self.now is not None:
            cmd += ["--now", self.now.isoformat()]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     text=True)
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, word: str, timeout: float = 60.0) -> None:
        """Block until a line starting with `word` was printed (TimeoutError otherwise)."""
        with self._changed:
            if not self._changed.wait_for(
                    lambda: any(line.startswith(word) for line in self.lines),
                    check_seconds(timeout, "timeout")):
                raise TimeoutError(f"the relay did not print {word!r}; it printed {self.lines}")

    @property
    def pid(self) -> int:
        """The backend pid of the relay's outbox connection (from its first line)."""
        self.wait_for("relay pid=")
        return int(next(line for line in self.lines if line.startswith("relay pid="))
                   .removeprefix("relay pid="))

    def kill(self) -> int:
        """SIGKILL the relay and return its exit status (-9)."""
        self.proc.kill()
        return self.proc.wait()

    def wait(self, timeout: float = 60.0) -> int:
        return self.proc.wait(timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cachequeue.course.procs.relaylab")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--hold-after", type=int, default=None)
    parser.add_argument("--now", type=datetime.fromisoformat, default=None)
    parser.add_argument("--lease", type=float, default=30.0)
    args = parser.parse_args(argv)
    sent = 0
    with db.connect(args.schema) as conn, db.connect(args.schema) as broker_conn:
        broker = Broker(broker_conn)
        if args.now is not None:
            db.set_clock(conn, args.now)
        print(f"relay pid={conn.info.backend_pid}", flush=True)

        def publish(event: outbox.Event) -> None:
            nonlocal sent
            broker.publish(event)
            sent += 1
            print(f"published event_id={event.event_id}", flush=True)
            if sent == args.hold_after:
                print("holding", flush=True)  # published, not marked: kill me now
                threading.Event().wait()

        relayed = outbox.relay_once(conn, publish, lease=args.lease)
    print(f"relayed count={relayed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
