"""Connections to the shared Redis, and the key prefix that keeps one user's keys apart.

A Redis database is often shared (CI's leg 2 runs in database 0 of the machine's server),
so nothing here ever runs FLUSHDB or FLUSHALL: every key the course writes starts with a
namespace such as `cq:ch10:`, and `clear(client, namespace)` deletes only those keys.
"""

from __future__ import annotations

import re

import redis

from .. import embedded_redis
from ..checks import check_instance, check_seconds, check_text
from ..db import schema_name

__all__ = ["check_namespace", "clear", "connect", "namespace", "server_version"]

_NAMESPACE = re.compile(r"^cq:[a-z_][a-z0-9_]{0,62}:$")  # no glob characters: safe in SCAN MATCH


def connect(url: str | None = None, *, timeout: float = 5.0, asynchronous: bool = False):
    """A redis-py client for `url` (default: REDIS_URL, else the embedded server, which
    this never starts: stopped, it is RedisUnavailable saying to run `make db`).

    Replies are decoded to str; every connect and reply is bounded by `timeout` seconds and
    no error is retried behind the caller's back, so a dead or paused server shows up as a
    prompt `redis.ConnectionError` or `redis.TimeoutError`. `asynchronous=True` returns a
    `redis.asyncio.Redis` (for `SharedCache`).
    """
    timeout = check_seconds(timeout, "timeout")
    url = embedded_redis.redis_url() if url is None else check_text(url, "url", limit=2000)
    return embedded_redis.client(url, timeout=timeout, asynchronous=asynchronous)


def namespace(name: str) -> str:
    """The key prefix of a chapter or test: `cq:<name>:`, with $CACHEQUEUE_SCHEMA_SUFFIX
    appended to the name as for schemas, so a copy under test never shares keys with the
    chapter open in JupyterLab. `name` follows the schema-name rule (lower case, digits, _)."""
    return f"cq:{schema_name(name)}:"


def check_namespace(prefix: str) -> str:
    """`prefix` if it is a namespace made by namespace(): TypeError if it is no str,
    ValueError if it is another string."""
    if not _NAMESPACE.match(check_instance(prefix, "namespace", str)):
        raise ValueError(f"namespace must be a prefix made by namespace(), like 'cq:ch10:', "
                         f"got {prefix!r}")
    return prefix


def clear(client: redis.Redis, prefix: str) -> int:
    """Delete every key that starts with `prefix` (a namespace); return how many went.

    SCAN walks the keyspace in small steps, so this never blocks the server the way KEYS
    would, and it touches nothing outside the namespace."""
    pattern = check_namespace(prefix) + "*"
    deleted = 0
    batch: list[str] = []
    for key in client.scan_iter(match=pattern, count=500):
        batch.append(key)
        if len(batch) == 500:
            deleted += client.unlink(*batch)
            batch.clear()
    if batch:
        deleted += client.unlink(*batch)
    return deleted


def server_version(client: redis.Redis) -> str:
    """The server's version, e.g. '7.0.15' (the embedded server is 6.2)."""
    return client.info("server")["redis_version"]
