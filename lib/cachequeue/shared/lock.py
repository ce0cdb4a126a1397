"""A Redis lock with an expiry, an owner check on release and extend, and fencing tokens.

What it gives: at most one holder *according to Redis* at any moment; a holder can only
release or extend its own hold (each is one Lua script, so the check and the change are
atomic).

What it does not give: mutual exclusion at the resource. A holder can be paused (GC,
SIGSTOP, a slow network) past its expiry while another process acquires the lock; when the
first one resumes it still believes it holds the lock. Only the resource can refuse it, by
checking a fencing token (`cachequeue.shared.fencing.fenced_write`): a number given with
each acquisition, larger than every earlier one, so a smaller token never overwrites a
larger one.

Where the tokens come from decides what that promise survives (`fences=`):
- None (the default): the grant carries no token, and `fenced_write` refuses to pretend.
  Enough for a lock that only keeps work from being done twice, never for a guarded write.
- `RedisCounter()`: INCR of `<key>:fence` in the same Lua step as the SET NX, so a later
  grant always gets a larger token, *while Redis keeps its data*. The counter is memory:
  a restart without persistence, a FLUSHALL or an asynchronous failover to a replica that
  had not seen the last INCR hands out numbers again. A holder paused from before the loss
  then carries a token *larger* than the new holder's, and the resource lets the stale
  holder win and refuses the current one: it fails open.
- `fencing.Counter(conn, name)`: a row in PostgreSQL, incremented and committed (durably)
  after the SET NX; the lock then checks it is still the owner before it hands the token
  out. Tokens never repeat, whatever Redis loses, and a token is only ever given to a
  holder that kept the lock from its SET NX until after the token existed. It costs one
  database round trip and one more Redis round trip per acquisition.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Protocol

import redis

from ..checks import check_instance, check_int, check_seconds, check_text

__all__ = ["ACQUIRE_SCRIPT", "EXTEND_SCRIPT", "OWNS_SCRIPT", "RELEASE_SCRIPT", "FenceSource",
           "LockGrant", "RedisCounter", "RedisLock", "milliseconds"]

# KEYS[1] lock key, KEYS[2] its fencing counter; ARGV[1] owner token, ARGV[2] ttl in ms.
# The SET NX PX and the INCR are one atomic step: a token handed out later is always larger,
# even if the holder that got the smaller one is paused between the two (as long as Redis
# keeps the counter: see the module docstring).
ACQUIRE_SCRIPT = """
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return 0
end
return redis.call('incr', KEYS[2])
"""

# KEYS[1] lock key; ARGV[1] owner token. 1 if the key holds our token now, else 0.
OWNS_SCRIPT = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return 1
end
return 0
"""

# KEYS[1] lock key; ARGV[1] owner token. Compare-and-delete: 1 if our hold was deleted,
# 0 if the key is gone or holds another owner's token (that hold is left alone).
RELEASE_SCRIPT = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""

# KEYS[1] lock key; ARGV[1] owner token; ARGV[2] ttl in ms from now. Compare-and-pexpire:
# 1 if our hold now expires ttl ms from now, 0 if it is gone or another owner's.
EXTEND_SCRIPT = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


def milliseconds(seconds: float) -> int:
    """Seconds (as the course writes durations) to the whole milliseconds PX wants, >= 1."""
    return max(1, round(seconds * 1000))


class FenceSource(Protocol):
    """Where fencing tokens come from: `next()` returns a number larger than every earlier
    one it returned (`fencing.Counter` is the durable one)."""

    def next(self) -> int: ...


@dataclass(frozen=True, slots=True)
class RedisCounter:
    """Fencing tokens from INCR of `<lock key>:fence`, in the acquire script itself: fast,
    and they repeat after Redis loses the counter (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class LockGrant:
    """One acquisition: the random owner token stored in the lock key, and the fencing token.

    `owner` proves the hold to Redis (release, extend); `fence` is what a resource checks:
    a write carrying a smaller fence than one it has already accepted is refused. `fence`
    is None for a lock made without a fence source.
    """

    key: str
    owner: str
    fence: int | None
    ttl: float


class RedisLock:
    """`grant = lock.acquire()`; work; `lock.release(grant)`. Never blocks, never retries.

    `acquire()` returns a LockGrant, or None when another owner holds the key (a caller
    that wants to wait retries with backoff). `release(grant)` and `extend(grant)` return
    whether the hold was still ours: False means it expired, and someone else may hold it
    now. `ttl` is in seconds (converted to PX milliseconds). `fences` says where fencing
    tokens come from (None, `RedisCounter()` or `fencing.Counter`: the module docstring
    says what each survives); a RedisCounter lives in the key `<key>:fence`, never expired.
    """

    __slots__ = ("_acquire", "_client", "_extend", "_fences", "_owns", "_release", "fence_key",
                 "key", "ttl")

    def __init__(self, client: redis.Redis, key: str, *, ttl: float,
                 fences: FenceSource | RedisCounter | None = None) -> None:
        self._client = check_instance(client, "client", redis.Redis)
        self.key = check_text(key, "key", limit=1000)
        self.fence_key = f"{key}:fence"
        self.ttl = check_seconds(ttl, "ttl")
        if not (fences is None or isinstance(fences, RedisCounter)
                or callable(getattr(fences, "next", None))):
            raise TypeError("fences must be None, RedisCounter() or a source with next() "
                            f"(fencing.Counter), got {type(fences).__name__}")
        self._fences = fences
        self._acquire = client.register_script(ACQUIRE_SCRIPT)
        self._release = client.register_script(RELEASE_SCRIPT)
        self._extend = client.register_script(EXTEND_SCRIPT)
        self._owns = client.register_script(OWNS_SCRIPT)

    def acquire(self, *, ttl: float | None = None) -> LockGrant | None:
        """Try once: a LockGrant with a new owner token (and a fencing token, if this lock
        has a fence source), or None if the lock is held, or was lost while a token from
        an outside source was being issued (that token is then never handed out)."""
        ttl = self.ttl if ttl is None else check_seconds(ttl, "ttl")
        owner = secrets.token_hex(16)
        if isinstance(self._fences, RedisCounter):
            fence = self._acquire(keys=[self.key, self.fence_key],
                                  args=[owner, milliseconds(ttl)])
            return LockGrant(self.key, owner, int(fence), ttl) if fence else None
        if not self._client.set(self.key, owner, nx=True, px=milliseconds(ttl)):
            return None
        if self._fences is None:
            return LockGrant(self.key, owner, None, ttl)
        try:
            fence = check_int(self._fences.next(), "the fence source's next()", minimum=1)
        except BaseException:
            self._release(keys=[self.key], args=[owner])  # no token, no hold
            raise
        # Still ours after the token exists? Then no other holder can have acquired between
        # our SET NX and now, and every later holder's token is issued after ours: larger.
        if not self._owns(keys=[self.key], args=[owner]):
            return None
        return LockGrant(self.key, owner, fence, ttl)

    def release(self, grant: LockGrant) -> bool:
        """Delete the lock if `grant` still holds it; False (and nothing deleted) otherwise."""
        self._check(grant)
        return bool(self._release(keys=[self.key], args=[grant.owner]))

    def extend(self, grant: LockGrant, *, ttl: float | None = None) -> bool:
        """Make the hold expire `ttl` seconds from now (default: the grant's ttl) if `grant`
        still holds it; False otherwise. An expired hold is never brought back."""
        self._check(grant)
        ttl = grant.ttl if ttl is None else check_seconds(ttl, "ttl")
        return bool(self._extend(keys=[self.key], args=[grant.owner, milliseconds(ttl)]))

    def owner(self) -> str | None:
        """The owner token stored now, or None when nobody holds the lock (a snapshot only)."""
        return self._client.get(self.key)

    def _check(self, grant: LockGrant) -> None:
        check_instance(grant, "grant", LockGrant)
        if grant.key != self.key:
            raise ValueError(f"grant is for lock {grant.key!r}, not {self.key!r}")

    def __repr__(self) -> str:
        return f"RedisLock({self.key!r}, ttl={self.ttl:g})"
