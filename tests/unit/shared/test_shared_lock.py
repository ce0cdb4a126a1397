"""RedisLock on fakeredis (with Lua): ownership, fencing tokens and argument checks.

The same claims on a real server, with real expiry, are in
tests/integration/test_shared_redis.py.
"""

from __future__ import annotations

import fakeredis
import pytest

from cachequeue.shared import LockGrant, RedisCounter, RedisLock
from cachequeue.shared.lock import milliseconds


@pytest.fixture
def client():
    return fakeredis.FakeRedis(decode_responses=True)


def test_one_holder_at_a_time_and_each_acquisition_gets_a_larger_fence(client):
    lock = RedisLock(client, "cq:t:lock:doc", ttl=30, fences=RedisCounter())
    first = lock.acquire()
    assert first is not None and first.fence == 1
    assert lock.acquire() is None  # held: refused, and no fence is used up
    assert client.get("cq:t:lock:doc:fence") == "1"
    assert lock.release(first) is True
    second = lock.acquire()
    assert second.fence == 2 and second.owner != first.owner
    assert 29_000 < client.pttl("cq:t:lock:doc") <= 30_000


def test_a_non_owner_release_deletes_nothing(client):
    lock = RedisLock(client, "cq:t:lock:doc", ttl=30, fences=RedisCounter())
    held = lock.acquire()
    stranger = LockGrant(held.key, "not-the-owner", held.fence, held.ttl)
    assert lock.release(stranger) is False
    assert lock.owner() == held.owner and client.pttl(held.key) > 0


def test_extend_resets_the_ttl_of_our_own_hold_only(client):
    lock = RedisLock(client, "cq:t:lock:doc", ttl=1, fences=RedisCounter())
    held = lock.acquire()
    assert lock.extend(held, ttl=60) is True
    assert 59_000 < client.pttl(held.key) <= 60_000
    client.delete(held.key)  # gone (a real expiry is in the integration tests)
    assert lock.extend(held) is False
    assert client.exists(held.key) == 0, "an extend must never bring a lost hold back"
    other = lock.acquire()
    assert lock.extend(held) is False and lock.release(held) is False
    assert lock.owner() == other.owner


def test_grants_are_checked():
    client = fakeredis.FakeRedis(decode_responses=True)
    a = RedisLock(client, "cq:t:a", ttl=5, fences=RedisCounter())
    b = RedisLock(client, "cq:t:b", ttl=5, fences=RedisCounter())
    grant = a.acquire()
    with pytest.raises(ValueError, match="grant is for lock 'cq:t:a'"):
        b.release(grant)
    with pytest.raises(TypeError, match="grant must be a"):
        a.release(grant.owner)


@pytest.mark.parametrize(("ttl", "error"), [(0, ValueError), (-1, ValueError),
                                             (float("nan"), ValueError), ("5", TypeError),
                                             (True, TypeError)])
def test_bad_ttls_are_refused(ttl, error):
    with pytest.raises(error, match="ttl"):
        RedisLock(fakeredis.FakeRedis(), "cq:t:x", ttl=ttl)


def test_the_client_must_be_a_sync_redis_client():
    with pytest.raises(TypeError, match="client must be a redis.client.Redis"):
        RedisLock(fakeredis.FakeAsyncRedis(), "cq:t:x", ttl=1)


def test_milliseconds_rounds_and_never_gives_zero():
    assert (milliseconds(30), milliseconds(0.0304), milliseconds(1e-6)) == (30_000, 30, 1)


class _Source:
    """A fence source whose next() may also do something to the lock meanwhile."""

    def __init__(self, during=None, fail=False):
        self.issued, self.during, self.fail = 0, during, fail

    def next(self):
        if self.fail:
            raise RuntimeError("database unreachable")
        self.issued += 1
        if self.during:
            self.during()
        return self.issued


def test_a_lock_without_a_fence_source_gives_no_token_and_fenced_write_refuses_none(client):
    from cachequeue.shared import fenced_write

    grant = RedisLock(client, "cq:t:lock:doc", ttl=30).acquire()
    assert grant.fence is None and client.exists("cq:t:lock:doc:fence") == 0
    with pytest.raises(TypeError, match="carries no fencing token"):
        fenced_write(object(), "doc", grant.fence, {})


def test_tokens_from_an_outside_source_follow_the_order_of_acquisitions(client):
    source = _Source()
    lock = RedisLock(client, "cq:t:lock:doc", ttl=30, fences=source)
    first = lock.acquire()
    assert lock.acquire() is None and source.issued == 1, "no token for a refused acquire"
    lock.release(first)
    assert [first.fence, lock.acquire().fence] == [1, 2]


def test_a_hold_lost_while_the_token_was_issued_gets_no_grant(client):
    def taken_over():  # our hold expires and someone else acquires, between SET NX and check
        client.set("cq:t:lock:doc", "someone-else", px=30_000)

    lock = RedisLock(client, "cq:t:lock:doc", ttl=30, fences=_Source(during=taken_over))
    assert lock.acquire() is None
    assert lock.owner() == "someone-else", "the other holder's lock is left alone"


def test_a_failing_source_releases_the_hold_it_cannot_fence(client):
    lock = RedisLock(client, "cq:t:lock:doc", ttl=30, fences=_Source(fail=True))
    with pytest.raises(RuntimeError, match="database unreachable"):
        lock.acquire()
    assert lock.owner() is None


def test_a_fence_source_must_have_next(client):
    with pytest.raises(TypeError, match="fences must be None, RedisCounter"):
        RedisLock(client, "cq:t:x", ttl=1, fences=42)
