"""A Redis lock with an expiry, an owner check on release and extend, and fencing tokens.

What it gives: at most one holder *according to Redis* at any moment; a holder can only
release or extend its own hold (each is one Lua script, so the check and the change are
atomic); every acquisition gets a fencing token larger than every earlier one.

What it does not give: mutual exclusion at the resource. A holder can be paused (GC,
SIGSTOP, a slow network) past its expiry while another process acquires the lock; when the
first one resumes it still believes it holds the lock. Only the resource can refuse it, by
checking the fencing token (`cachequeue.shared.fencing`). Redis keeps the counter in memory:
a server restart without persistence starts it again at 1, and a fenced resource then refuses
every write until the counter passes the last token it saw (it fails closed, not open).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import redis

from ..checks import check_instance, check_seconds, check_text

__all__ = ["ACQUIRE_SCRIPT", "EXTEND_SCRIPT", "RELEASE_SCRIPT", "LockGrant", "RedisLock", "milliseconds"]

# KEYS[1] lock key, KEYS[2] its fencing counter; ARGV[1] owner token, ARGV[2] ttl in ms.
# The SET NX PX and the INCR are one atomic step: a token handed out later is always larger,
# even if the holder that got the smaller one is paused between the two.
ACQUIRE_SCRIPT = """
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return 0
end
return redis.call('incr', KEYS[2])
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


@dataclass(frozen=True, slots=True)
class LockGrant:
    """One acquisition: the random owner token stored in the lock key, and the fencing token.

    `owner` proves the hold to Redis (release, extend); `fence` is what a resource checks:
    a write carrying a smaller fence than one it has already accepted is refused.
    """

    key: str
    owner: str
    fence: int
    ttl: float


class RedisLock:
    """`grant = lock.acquire()`; work; `lock.release(grant)`. Never blocks, never retries.

    `acquire()` returns a LockGrant, or None when another owner holds the key (a caller
    that wants to wait retries with backoff). `release(grant)` and `extend(grant)` return
    whether the hold was still ours: False means it expired, and someone else may hold it
    now. `ttl` is in seconds (converted to PX milliseconds). The fencing counter lives in the
    key `<key>:fence` and is never expired.
    """

    __slots__ = ("_acquire", "_client", "_extend", "_release", "fence_key", "key", "ttl")

    def __init__(self, client: redis.Redis, key: str, *, ttl: float) -> None:
        self._client = check_instance(client, "client", redis.Redis)
        self.key = check_text(key, "key", limit=1000)
        self.fence_key = f"{key}:fence"
        self.ttl = check_seconds(ttl, "ttl")
        self._acquire = client.register_script(ACQUIRE_SCRIPT)
        self._release = client.register_script(RELEASE_SCRIPT)
        self._extend = client.register_script(EXTEND_SCRIPT)

    def acquire(self, *, ttl: float | None = None) -> LockGrant | None:
        """Try once: a LockGrant with a new owner token and fencing token, or None if held."""
        ttl = self.ttl if ttl is None else check_seconds(ttl, "ttl")
        owner = secrets.token_hex(16)
        fence = self._acquire(keys=[self.key, self.fence_key], args=[owner, milliseconds(ttl)])
        return LockGrant(self.key, owner, int(fence), ttl) if fence else None

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
