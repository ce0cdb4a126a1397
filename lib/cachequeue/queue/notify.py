"""Job notifications: the jobs table's LISTEN/NOTIFY channel, watches, and a thread that listens.

The triggers in `sql/queue.sql` notify on the channel `channel(conn)`, with the JSON payload
`{"job_id", "tenant_id", "kind", "state", "attempts"}`, for every insert and every change
into pending or cancelled (what wakes workers), and, for a job somebody `watch`ed, for every
other change of its state or attempts too (claimed, taken over, done, failed: what event
streams show). Unwatched jobs' claims and finishes notify nobody: PostgreSQL serialises all
notifying commits on one lock, and a queue that notified on each of them made its workers
wait for each other. Notifications are a hint to look again, never the record: one sent
while a listener was disconnected is gone, so a listener re-reads the table whenever it
(re)connects. `Listener` does that for a process that has no loop of its own (the HTTP
service's hub): it keeps its own connection in LISTEN mode on a thread, reconnects with
backoff, and calls back on every notification and after every (re)connect. A `Worker`
LISTENs on its loop's connection instead and reads what arrived each turn (one thread's
turn per wake-up, not two).
`wait_status` is the client side: watch one job and block until it reaches a state, woken
by its notifications instead of polling in a loop.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from .. import sqlfile
from ..checks import check_callable, check_int, check_seconds, check_text
from ..errors import DatabaseUnavailable
from . import jobs
from .logline import one_line
from .retry import RetryPolicy

__all__ = ["CONNECTION_ERRORS", "FINAL", "JobEvent", "Listener", "channel", "event", "listen",
           "wait_status", "watch"]

_QUERIES = sqlfile.load(__package__, "notify.sql")

# What a lost or refused connection raises: a server that stopped or restarted, a network
# that dropped, a server still starting up. Anything else is a real error.
CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, DatabaseUnavailable)

FINAL = ("done", "failed", "cancelled")  # the states a job does not leave on its own


@dataclass(frozen=True)
class JobEvent:
    """One notification's payload: a job of `kind` is now in `state` after `attempts` attempts.

    `watch` is True for the notification a `watch()` of a pending job sends: nothing changed,
    but a claim may have skipped the job while the watch held its row lock."""

    job_id: int
    tenant_id: int
    kind: str
    state: str
    attempts: int
    watch: bool = field(default=False, repr=False)  # about the notification, not the job


_EVENT_KEYS = frozenset(JobEvent.__dataclass_fields__)


def channel(conn: psycopg.Connection) -> str:
    """The notification channel of the connection's schema (`cq_jobs_<schema>`)."""
    return conn.execute(_QUERIES["channel"].sql).fetchone()[0]


def listen(conn: psycopg.Connection) -> str:
    """LISTEN on the schema's channel (the connection must be in autocommit mode, so the
    LISTEN takes effect at once); return the channel's name."""
    name = channel(conn)
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(name)))
    return name


def event(notify: psycopg.Notify) -> JobEvent:
    """The JobEvent in a notification from the jobs channel (keys added later are ignored)."""
    payload = json.loads(notify.payload)
    return JobEvent(**{k: v for k, v in payload.items() if k in _EVENT_KEYS})


def watch(conn: psycopg.Connection, *, tenant_id: int, job_id: int) -> bool:
    """From now on, every change of this tenant's job's state or attempts notifies (claims,
    takeovers, done, failed; not only the wake-ups). False when there is no such job of
    this tenant. Read the job AFTER this returns: a change committed before is then in the
    read, one committed after notifies. One short statement; a watch is never taken back."""
    params = {"tenant_id": check_int(tenant_id, "tenant_id"), "job_id": check_int(job_id, "job_id")}
    return conn.execute(_QUERIES["watch"].sql, params).fetchone()[0]


def wait_status(conn: psycopg.Connection, *, tenant_id: int, job_id: int,
                states: Iterable[str] = FINAL, timeout: float = 60.0) -> jobs.JobStatus:
    """Block until this tenant's job is in one of `states`; return its status.

    Watches the job, reads the status, then waits for the job's notifications (re-reading
    at least every second), so it reacts at once and never misses a change in between.
    TimeoutError after `timeout` seconds, LookupError for a job this tenant cannot see.
    The connection LISTENs meanwhile and stops listening before returning.
    """
    wanted = {check_text(s, "each state") for s in states}
    check_seconds(timeout, "timeout")
    name = listen(conn)
    deadline = time.monotonic() + timeout
    try:
        watch(conn, tenant_id=tenant_id, job_id=job_id)  # a missing job: found by status below
        while True:
            status = jobs.status(conn, tenant_id=tenant_id, job_id=job_id)
            if status is None:
                raise LookupError(f"no job {job_id} of tenant {tenant_id}")
            if status.state in wanted:
                return status
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"job {job_id} is still {status.state} after {timeout:g} s; "
                                   f"waited for {sorted(wanted)}")
            for notify in conn.notifies(timeout=min(remaining, 1.0)):
                if event(notify).job_id == job_id:
                    break
    finally:
        conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(name)))


class Listener:
    """A daemon thread that LISTENs on the jobs channel and calls `on_event` for each event.

    `on_event(None)` is called after every successful (re)connect: notifications sent
    while the thread was not listening are lost, so the callback should look at the table.
    `connect()` returns a new autocommit connection to the schema. A lost connection is
    logged through `log(event, **fields)` and retried with full-jitter backoff (`backoff`);
    the thread never gives up until `stop()`.
    """

    def __init__(self, connect: Callable[[], psycopg.Connection],
                 on_event: Callable[[JobEvent | None], None], *,
                 log: Callable[..., None] = lambda event, **fields: None,
                 backoff: RetryPolicy | None = None, rng: random.Random | None = None) -> None:
        self._connect = check_callable(connect, "connect")
        self._on_event = check_callable(on_event, "on_event")
        self._log = log
        self._backoff = backoff or RetryPolicy(base=0.05, cap=2.0)
        self._rng = rng or random.Random()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cachequeue-listener",
                                        daemon=True)
        self.statements = 0  # LISTEN and channel look-ups sent (the idle cost of listening)

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to stop; it notices within its 0.5 s wait slice."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            try:
                with self._connect() as conn:
                    listen(conn)
                    self.statements += 2
                    if failures:
                        self._log("listening", after_failures=failures)
                    failures = 0
                    self._on_event(None)
                    while not self._stopped.is_set():
                        # Waiting reads the socket only: no statement is sent while idle.
                        for notify in conn.notifies(timeout=0.5):
                            self._on_event(event(notify))
            except CONNECTION_ERRORS as exc:
                failures += 1
                delay = self._backoff.delay(min(failures, 30), self._rng)
                self._log("listen-lost", retry_in=round(delay, 3), error=one_line(exc))
                self._stopped.wait(delay)


