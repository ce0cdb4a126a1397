"""The `Service`: what every route of one app shares (settings, connection pool, hub).

Connections come from a `psycopg_pool.ConnectionPool`: autocommit, search_path = the
service's schema, each one checked before use, so a database restart costs one failed
check, not a failed request. Blocking database calls run in worker threads
(`Service.call`); the event loop only waits. The hub (`hub.Hub`) holds the process's one
LISTEN connection. `create_app` makes one Service and keeps it in `app.state.service`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio
import psycopg
from fastapi import Depends, Request
from psycopg_pool import ConnectionPool

from .. import db
from ..checks import check_callable, check_int, check_seconds
from ..queue.logline import log_line
from ..queue.notify import one_line
from .auth import Authenticator
from .hub import Hub
from .operations import CanRead, check_ready

__all__ = ["LOGGER", "Service", "ServiceDep", "service_of"]

LOGGER = logging.getLogger("cachequeue.service")
T = TypeVar("T")


class Service:
    """What the routes share: settings, the pool, the hub. One per app (`app.state.service`)."""

    def __init__(self, schema: str, authenticator: Authenticator, *, url: str | None = None,
                 can_read: CanRead | None = None, pool_size: int = 8,
                 pool_timeout: float = 5.0, ready_timeout: float = 2.0,
                 retry_after: int = 1) -> None:
        self.schema = db.schema_name(schema)
        self.authenticator = check_callable(authenticator, "authenticator",
                                            "a callable token -> Principal | None")
        self.can_read = None if can_read is None else check_callable(can_read, "can_read")
        self.ready_timeout = check_seconds(ready_timeout, "ready_timeout", upper=60.0)
        self.retry_after = check_int(retry_after, "retry_after", minimum=1, maximum=3600)
        self._pool_size = check_int(pool_size, "pool_size", minimum=1, maximum=100)
        # How long a request waits for a connection before it is answered 503.
        self._pool_timeout = check_seconds(pool_timeout, "pool_timeout", upper=300.0)
        self._url = url
        self.pool: ConnectionPool | None = None
        self.hub = Hub(lambda: db.connect(schema, url=url), log=self.log)

    def log(self, event: str, **fields: Any) -> None:
        LOGGER.info(log_line("service", event, **fields))

    def open(self) -> None:
        """Open the pool (connections are made in the background) and start the hub."""
        # The same session settings as db.connect(schema): UTC, the schema on the search_path.
        options = f"-c TimeZone=UTC -c search_path={self.schema}"
        self.pool = ConnectionPool(
            self._url or db.database_url(), name="cachequeue-service", open=False,
            min_size=1, max_size=self._pool_size, timeout=self._pool_timeout,
            kwargs={"autocommit": True, "options": options, "connect_timeout": 10},
            check=ConnectionPool.check_connection)
        self.pool.open(wait=False)
        self.hub.start()
        self.log("opened", schema=self.schema, pool=self._pool_size)

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
        """`fn(conn, *args, **kwargs)` in a worker thread, with a pooled connection."""
        return await anyio.to_thread.run_sync(self._run, fn, args, kwargs)

    def _ready(self) -> int:
        with self.pool.connection(timeout=self.ready_timeout) as conn:
            return check_ready(conn, self.ready_timeout)

    async def ready(self) -> str | None:
        """None when the database answers the claim path and commits within ready_timeout;
        otherwise the reason, in one line."""
        try:
            with anyio.fail_after(self.ready_timeout + 0.5):
                # abandon_on_cancel: a hung connection must not hold the answer back.
                await anyio.to_thread.run_sync(self._ready, abandon_on_cancel=True)
        except TimeoutError:
            return f"no answer within {self.ready_timeout:g} s"
        except psycopg.Error as exc:
            return one_line(exc)
        return None


def service_of(request: Request) -> Service:
    """FastAPI dependency: the app's Service."""
    return request.app.state.service


# The app's Service, as a route parameter: `service: ServiceDep`.
ServiceDep = Annotated[Service, Depends(service_of)]
