"""Integration tests run against a real PostgreSQL (DATABASE_URL, else the embedded server).

Every test here is marked `db`, so `pytest -m "not db"` runs only the pure tests. Each test
that asks for `schema` or `conn` gets its own freshly built schema, dropped afterwards.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from cachequeue import db
from cachequeue.course import chapter

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.db)


@pytest.fixture
def schema(database_url) -> str:
    """A unique schema name, created with the course schema and dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with db.connect() as conn:
        chapter.reset(conn, name)
    yield name
    with db.connect() as conn:
        db.drop_schema(conn, name)


@pytest.fixture
def conn(schema):
    """An autocommit connection whose search_path is the test's schema."""
    with db.connect(schema) as connection:
        yield connection


@pytest.fixture
def keyspace(redis_url):
    """(client, namespace): a sync Redis client and a unique key prefix, cleared afterwards.
    Tests never flush a database: CI's second leg shares database 0 with nobody, but a
    developer's REDIS_URL may point at one that holds other data."""
    from cachequeue import shared

    client = shared.connect(redis_url)
    prefix = shared.namespace(f"t_{uuid.uuid4().hex[:12]}")
    yield client, prefix
    shared.clear(client, prefix)
    client.close()


@pytest.fixture
def redis_binary():
    """Skips the test where no redis-server binary exists."""
    from cachequeue import embedded_redis
    from cachequeue.errors import RedisUnavailable

    _binary_or_skip(embedded_redis, RedisUnavailable)


@pytest.fixture
def nats_binary():
    """Skips the test where no nats-server binary exists."""
    from cachequeue import embedded_nats
    from cachequeue.errors import NatsUnavailable

    _binary_or_skip(embedded_nats, NatsUnavailable)


def _binary_or_skip(module, error) -> None:
    try:
        module.binary()
    except error as exc:
        pytest.skip(str(exc))


@pytest.fixture
def private_redis(redis_binary):
    """A throw-away embedded Redis server of this test's own (stopped and removed after),
    for tests that stop or freeze the server; skipped where no redis-server binary exists."""
    from cachequeue import embedded_redis

    with embedded_redis.Server.private() as server:
        yield server


@pytest.fixture
def private_nats(nats_binary):
    """A throw-away nats-server of this test's own with JetStream (its own ports and store,
    stopped and removed after), for tests that kill or freeze the broker."""
    from cachequeue import embedded_nats

    with embedded_nats.Server.private() as server:
        yield server


@pytest.fixture
def nats_cluster(nats_binary):
    """A three-node JetStream cluster of this test's own (stopped and removed after)."""
    from cachequeue import embedded_nats

    with embedded_nats.cluster(3) as made:
        yield made
