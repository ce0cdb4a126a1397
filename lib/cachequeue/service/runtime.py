"""The `Service`: what every route of one app shares (settings, connection pool, hub, counts).

Connections come from a `psycopg_pool.ConnectionPool`: autocommit, search_path = the
service's schema, each one checked before use, so a database restart costs one failed
check, not a failed request. Blocking database calls run in worker threads
(`Service.call`); the event loop only waits. The hub (`hub.Hub`) holds the process's one
LISTEN connection. `create_app` makes one Service and keeps it in `app.state.service`.

Under overload the service sheds instead of queueing. At most `max_in_flight` database
calls (default 4 x pool_size) are under way at once, each in a thread of the service's own
limiter; the next one is answered at once with 503, code `overloaded`, and Retry-After,
without a thread, a pool wait or a query. So a request waits for a connection only behind
at most max_in_flight - pool_size others, a short and bounded time, instead of joining a
queue that grows until the pool's timeout (5 s) turns every answer into an error: under a
burst of 300 requests, some are answered "come back in a second" within milliseconds and
the rest are served at the speed of the pool. A pool that still times out (the database is
down or hung) is 503 `database_unavailable`, as before.

Every statement on a pooled connection is bounded: `statement_timeout` (default 10 s) and
`lock_timeout` (default 5 s, as long as a request waits for a connection) are session
settings of each connection (`cachequeue serve --statement-timeout/--lock-timeout`). A
statement that waits behind a lock (a migration's `LOCK TABLE`, a long `ALTER`) is
cancelled at the bound and its request answered 503 `database_unavailable` with
Retry-After, instead of holding a connection and a client for as long as the lock is held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Annotated, Any, TypeVar

import anyio
import psycopg
from fastapi import Depends, Request
from psycopg_pool import ConnectionPool, PoolTimeout

from .. import db
from ..checks import check_bool, check_callable, check_int, check_seconds, check_text
from ..queue.logline import log_line, one_line
from .auth import Authenticator
from .exporter import TOP_TENANTS, ProcessMetrics
from .hub import Hub
from .operations import CanRead, CheckSubmit, NotReady, check_ready
from .problems import Problem
from .streamreads import SharedReads
from .tenantlimits import TenantLimits
from .tenantlimits import install as install_buckets

__all__ = ["LOGGER", "Service", "ServiceDep", "service_of"]

LOGGER = logging.getLogger("cachequeue.service")
T = TypeVar("T")


class Service:
    """What the routes share: settings, the pool, the hub. One per app (`app.state.service`).

    Settings: pool_size, pool_timeout (how long a call waits for a connection), ready_timeout,
    retry_after (seconds, in 202s and 503s), max_in_flight (database calls under way before
    the next is shed; default 4 x pool_size), queue_metrics (serve the queue's database-wide
    series on the operator listener: one process of a deployment), counter_tenants (tenant
    ids that keep their own label in the queue's counters; at most exporter.TOP_TENANTS,
    fixed for the process's life), worker_kinds (the kinds
    the workers that serve this queue run, when the service knows them: a job of another
    kind would wait forever, so submit refuses it; None: not known, every kind the queue
    knows is accepted), statement_timeout and lock_timeout (seconds: the bounds of every
    statement and lock wait on a pooled connection), stream_slots (connections the event
    streams' re-reads may use at once; default half the pool; see `streamreads`),
    submit_rate and submit_burst (per tenant, jobs per second, one bucket in the database
    for every process of the service; 429), max_pending
    (pending jobs per tenant, in the database; 429) and max_streams (open event streams per
    tenant and process; 429); 0 turns any of these four off (see `tenantlimits`).
    """

    def __init__(self, schema: str, authenticator: Authenticator, *, url: str | None = None,
                 can_read: CanRead | None = None, check_submit: CheckSubmit | None = None,
                 pool_size: int = 8, pool_timeout: float = 5.0, ready_timeout: float = 2.0,
                 retry_after: int = 1, max_in_flight: int | None = None,
                 queue_metrics: bool = False, counter_tenants: Collection[int] = (),
                 worker_kinds: Collection[str] | None = None, statement_timeout: float = 10.0,
                 lock_timeout: float = 5.0, stream_slots: int | None = None,
                 submit_rate: float = 100.0, submit_burst: float = 200.0,
                 max_pending: int = 2000, max_streams: int = 100) -> None:
        self.schema = db.schema_name(schema)
        self.authenticator = check_callable(authenticator, "authenticator",
                                            "a callable token -> Principal | None")
        self.can_read = None if can_read is None else check_callable(can_read, "can_read")
        self.check_submit = (None if check_submit is None
                             else check_callable(check_submit, "check_submit"))
        self.ready_timeout = check_seconds(ready_timeout, "ready_timeout", upper=60.0)
        self.retry_after = check_int(retry_after, "retry_after", minimum=1, maximum=3600)
        self._pool_size = check_int(pool_size, "pool_size", minimum=1, maximum=100)
        # How long a request waits for a connection before it is answered 503.
        self._pool_timeout = check_seconds(pool_timeout, "pool_timeout", upper=300.0)
        # The bound of every statement, and of every wait for a lock, on a pooled connection.
        self.statement_timeout = self.lock_timeout = 0.0
        self.configure(statement_timeout=statement_timeout, lock_timeout=lock_timeout)
        self.max_in_flight = check_int(4 * self._pool_size if max_in_flight is None
                                       else max_in_flight, "max_in_flight", minimum=1,
                                       maximum=1000)
        self.queue_metrics = False
        if isinstance(counter_tenants, str | bytes) or len(counter_tenants) > TOP_TENANTS:
            raise ValueError(f"counter_tenants must be at most {TOP_TENANTS} tenant ids")
        self.counter_tenants = tuple(check_int(t, "each counter tenant", minimum=1)
                                     for t in counter_tenants)
        self.worker_kinds: frozenset[str] | None = None
        self.workers_running: Callable[[], int] | None = None
        self.configure(queue_metrics=queue_metrics, worker_kinds=worker_kinds)
        # Per tenant: the submit rate (a bucket in the database) and the open streams of
        # this process (tenantlimits), and the pending jobs in the database
        # (operations.submit_job); 0 turns one off.
        self.limits = TenantLimits(submit_rate=submit_rate, submit_burst=submit_burst,
                                   max_streams=max_streams)
        self.max_pending = check_int(max_pending, "max_pending", minimum=0, maximum=10**9)
        self.in_flight = 0
        self._limiter: anyio.CapacityLimiter | None = None
        # The event streams' re-reads: shared per job, never shed (streamreads).
        self.stream_reads = SharedReads(self._run, slots=check_int(
            max(1, self._pool_size // 2) if stream_slots is None else stream_slots,
            "stream_slots", minimum=1, maximum=100))
        self._url = url
        self._installed = False
        self.pool: ConnectionPool | None = None
        self.hub = Hub(lambda: db.connect(schema, url=url), log=self.log)
        self.metrics = ProcessMetrics()
        self.metrics.gauge("cq_http_streams", "Event streams open.", lambda: self.hub.streams)
        self.metrics.gauge("cq_http_in_flight", "Database calls under way.",
                           lambda: self.in_flight)

    def configure(self, *, queue_metrics: bool | None = None,
                  worker_kinds: Collection[str] | None = None,
                  workers_running: Callable[[], int] | None = None,
                  statement_timeout: float | None = None,
                  lock_timeout: float | None = None, submit_rate: float | None = None,
                  submit_burst: float | None = None, max_pending: int | None = None,
                  max_streams: int | None = None) -> None:
        """Set what the process around the app knows (`cachequeue serve` calls this after
        the app's factory): whether it exports the queue's series, the kinds its
        workers run, how many of its worker processes run now (readiness fails when
        none does), the bounds of statements and lock waits (before `open()`: they
        are settings of the pool's connections), and the per-tenant limits (before any
        request). None leaves a setting as it is."""
        if max_pending is not None:
            self.max_pending = check_int(max_pending, "max_pending", minimum=0, maximum=10**9)
        if (submit_rate, submit_burst, max_streams) != (None, None, None):
            old = self.limits
            self.limits = TenantLimits(
                submit_rate=old.submit_rate if submit_rate is None else submit_rate,
                submit_burst=old.submit_burst if submit_burst is None else submit_burst,
                max_streams=old.max_streams if max_streams is None else max_streams)
        if statement_timeout is not None:
            self.statement_timeout = check_seconds(statement_timeout, "statement_timeout",
                                                   upper=300.0)
        if lock_timeout is not None:
            self.lock_timeout = check_seconds(lock_timeout, "lock_timeout", upper=300.0)
        if workers_running is not None:
            self.workers_running = check_callable(workers_running, "workers_running")
        if queue_metrics is not None:
            self.queue_metrics = check_bool(queue_metrics, "queue_metrics")
        if worker_kinds is not None:
            if isinstance(worker_kinds, str):
                raise TypeError("worker_kinds must be a collection of kind names, not a str")
            self.worker_kinds = frozenset(check_text(k, "each worker kind") for k in worker_kinds)

    def workers_missing(self) -> bool:
        """True when this process supervises workers (`configure(workers_running=...)`)
        and none of them runs now: readiness fails, the jobs would wait."""
        return self.workers_running is not None and self.workers_running() == 0

    def log(self, event: str, **fields: Any) -> None:
        LOGGER.info(log_line("service", event, **fields))

    def open(self) -> None:
        """Open the pool (connections are made in the background) and start the hub."""
        # The same session settings as db.connect(schema): UTC, the schema on the search_path.
        # Plus the bounds: a statement cancelled by either is a QueryCanceled or a
        # LockNotAvailable (OperationalErrors), answered 503 database_unavailable.
        options = (f"-c TimeZone=UTC -c search_path={self.schema}"
                   f" -c statement_timeout={_ms(self.statement_timeout)}"
                   f" -c lock_timeout={_ms(self.lock_timeout)}")
        self.pool = ConnectionPool(
            self._url or db.database_url(), name="cachequeue-service", open=False,
            min_size=1, max_size=self._pool_size, timeout=self._pool_timeout,
            kwargs={"autocommit": True, "options": options, "connect_timeout": 10},
            check=ConnectionPool.check_connection, configure=self._first_connection)
        self.pool.open(wait=False)
        self._limiter = anyio.CapacityLimiter(self.max_in_flight)
        self.stream_reads.open()
        self.hub.start()
        self.log("opened", schema=self.schema, pool=self._pool_size)

    def _first_connection(self, conn: psycopg.Connection) -> None:
        """The pool's connection hook: the first one creates the service's table (the
        tenants' submit buckets, IF NOT EXISTS); later ones find it done."""
        if not self._installed:
            install_buckets(conn)
            self._installed = True

    def close(self) -> None:
        self.hub.close()
        self.hub.stop()
        if self.pool is not None:
            self.pool.close()
        self.log("closed")

    def _run(self, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        with self.pool.connection() as conn:
            return fn(conn, *args, **kwargs)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(conn, *args, **kwargs)` in a worker thread, with a pooled connection; a 503
        `overloaded` Problem at once when max_in_flight calls are under way already."""
        if self.in_flight >= self.max_in_flight:
            self.metrics.shed()
            raise Problem(503, "overloaded",
                          f"the service is at its limit of {self.max_in_flight} requests "
                          "in progress; try again shortly", {"Retry-After": str(self.retry_after)})
        self.in_flight += 1
        try:
            return await anyio.to_thread.run_sync(self._run, fn, args, kwargs,
                                                  limiter=self._limiter)
        finally:
            self.in_flight -= 1

    def _ready(self) -> int:
        with self.pool.connection(timeout=self.ready_timeout) as conn:
            return check_ready(conn, self.ready_timeout)

    async def ready(self) -> str | None:
        """None when claims and commits would succeed now (operations.check_ready says what
        that proves), answered within ready_timeout; otherwise the reason, in one line.
        The reason is public (`/readyz` needs no token): it says what is wrong in words,
        never a driver's exception class or message; the service log has those."""
        try:
            with anyio.fail_after(self.ready_timeout + 0.5):
                # abandon_on_cancel: a hung connection must not hold the answer back.
                await anyio.to_thread.run_sync(self._ready, abandon_on_cancel=True)
        except TimeoutError:
            return f"no answer within {self.ready_timeout:g} s"
        except NotReady as exc:
            return str(exc)
        except psycopg.Error as exc:
            self.log("not-ready", error=one_line(exc))
            return _public_reason(exc, self.ready_timeout)
        return None


def _public_reason(exc: psycopg.Error, timeout: float) -> str:
    """What a failed readiness check may say in public about a database error."""
    if isinstance(exc, PoolTimeout):
        return f"no database connection within {timeout:g} s"
    if isinstance(exc, psycopg.errors.QueryCanceled | psycopg.errors.LockNotAvailable):
        return f"the check did not finish within {timeout:g} s"
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return "the database cannot be reached"
    return "the database refused the check"


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def service_of(request: Request) -> Service:
    """FastAPI dependency: the app's Service."""
    return request.app.state.service


# The app's Service, as a route parameter: `service: ServiceDep`.
ServiceDep = Annotated[Service, Depends(service_of)]
