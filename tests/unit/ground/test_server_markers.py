"""The check that keeps the `db`, `redis` and `nats` markers complete (conftest.py): CI's
second leg runs only the tests marked so against the PostgreSQL 15, Redis 7 and NATS services, so a test
that needs a server but is not marked must fail, not pass on the first leg alone."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import fakeredis
import nats
import psycopg
import pytest
import redis

from cachequeue import db, embedded_nats, shared


def test_an_unmarked_test_cannot_connect_to_postgresql():
    for connect in (db.connect, lambda: psycopg.connect("host=127.0.0.1 dbname=x"),
                    lambda: psycopg.Connection.connect("dbname=x")):
        with pytest.raises(RuntimeError, match=r"is not marked `db`.*pytest\.mark\.db"):
            connect()


def test_an_unmarked_test_cannot_connect_to_redis_but_fakeredis_works():
    client = redis.Redis(host="127.0.0.1", port=6379)
    with pytest.raises(RuntimeError, match=r"is not marked `redis`"):
        client.ping()
    with pytest.raises(RuntimeError, match=r"is not marked `redis`"):
        redis.Redis(unix_socket_path="/tmp/none.sock").ping()
    fake = fakeredis.FakeRedis()
    assert fake.set("k", "v") and fake.get("k") == b"v"


def test_an_unmarked_test_cannot_connect_to_nats():
    with pytest.raises(RuntimeError, match=r"is not marked `nats`.*pytest\.mark\.nats"):
        asyncio.run(nats.connect("nats://127.0.0.1:4222"))
    with pytest.raises(RuntimeError, match=r"is not marked `nats`"):
        asyncio.run(embedded_nats.connect("nats://127.0.0.1:4222"))
    with pytest.raises(RuntimeError, match=r"is not marked `nats`"):
        embedded_nats.info("nats://127.0.0.1:4222")


def test_child_processes_of_an_unmarked_test_are_refused_too():
    probe = ("from cachequeue import db, shared\n"
             "import asyncio\n"
             "from cachequeue import embedded_nats\n"
             "for name, connect in [('db', db.connect), ('redis', lambda: shared.connect().ping()),\n"
             "                      ('nats', lambda: asyncio.run(embedded_nats.connect()))]:\n"
             "    try:\n"
             "        connect()\n"
             "    except Exception as exc:\n"
             "        print(name, type(exc).__name__)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split("\n")[:3] == ["db DatabaseUnavailable", "redis ConnectionError",
                                            "nats NatsUnavailable"], done
    assert "not-marked-nats" in embedded_nats.nats_url()


@pytest.mark.db
def test_a_test_marked_db_connects(database_url):
    with db.connect() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.redis
def test_a_test_marked_redis_connects(redis_url):
    client = shared.connect(redis_url)
    try:
        assert client.ping()
    finally:
        client.close()


@pytest.mark.nats
def test_a_test_marked_nats_connects(nats_url):
    async def roundtrip():
        client = await embedded_nats.connect(nats_url)
        try:
            return (await client.request("$JS.API.INFO", b"", timeout=5)).data
        finally:
            await client.close()

    assert b'"type":"io.nats.jetstream.api.v1.account_info_response"' in asyncio.run(roundtrip())
