"""Fencing tokens when Redis loses its data: the counter in Redis's memory repeats and lets a
stale holder win; tokens from fencing.Counter (a committed PostgreSQL row) never repeat.

The "stale holder" is a grant taken before the loss whose owner was paused past its TTL:
it still carries its token, and the resource is the only place that can refuse it.
"""

from __future__ import annotations

from cachequeue import db, shared
from cachequeue.shared import RedisCounter, RedisLock, fenced_read, fenced_write, fencing


def _restart_without_data(server) -> None:
    """A Redis with no persistence restarted: every key, the lock and its counter, is gone."""
    server.stop()
    server.start()


def _stale_and_current(lock: RedisLock, server):
    """A holds the lock, pauses past its TTL; B acquires and writes; Redis loses everything;
    C acquires. Returns the three grants (A's and B's from before the loss)."""
    a = lock.acquire(ttl=30)
    lock._client.delete(lock.key)  # A's hold has expired (a real expiry is tested elsewhere)
    b = lock.acquire(ttl=30)
    _restart_without_data(server)
    c = lock.acquire(ttl=30)
    return a, b, c


def test_a_counter_in_redis_repeats_after_a_restart_and_the_stale_holder_wins(private_redis, conn):
    fencing.install(conn)
    client = shared.connect(private_redis.url)
    lock = RedisLock(client, "cq:t:lock:doc", ttl=30, fences=RedisCounter())
    a, b, c = _stale_and_current(lock, private_redis)
    assert (a.fence, b.fence, c.fence) == (1, 2, 1), "the counter started again at 1"
    assert fenced_write(conn, "doc", b.fence, {"by": "b"}) is True
    # the current holder is refused, and B, whose hold was lost with Redis, has the last word
    assert fenced_write(conn, "doc", c.fence, {"by": "c"}) is False
    assert fenced_write(conn, "doc", b.fence, {"by": "b, again"}) is True
    assert fenced_read(conn, "doc") == (2, {"by": "b, again"})
    client.close()


def test_tokens_from_postgres_keep_rising_across_a_redis_restart(private_redis, conn, schema):
    fencing.install(conn)
    client = shared.connect(private_redis.url)
    with db.connect(schema) as tokens:
        lock = RedisLock(client, "cq:t:lock:doc", ttl=30,
                         fences=fencing.Counter(tokens, "doc"))
        a, b, c = _stale_and_current(lock, private_redis)
        assert (a.fence, b.fence, c.fence) == (1, 2, 3)
        assert fenced_write(conn, "doc", b.fence, {"by": "b"}) is True
        assert fenced_write(conn, "doc", c.fence, {"by": "c"}) is True
        assert fenced_write(conn, "doc", b.fence, {"by": "b, late"}) is False
        assert fenced_write(conn, "doc", a.fence, {"by": "a, later still"}) is False
        assert fenced_read(conn, "doc") == (3, {"by": "c"})
    client.close()


def test_a_counter_needs_an_idle_autocommit_connection(conn):
    fencing.install(conn)
    counter = fencing.Counter(conn, "doc")
    assert [counter.next(), counter.next()] == [1, 2]
    with conn.transaction():
        try:
            counter.next()
        except ValueError as exc:
            assert "autocommit connection outside any transaction" in str(exc)
        else:
            raise AssertionError("a token from an open transaction could be issued twice")
    assert counter.next() == 3
