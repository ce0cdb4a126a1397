"""The layer shared across processes, in Redis: a lock with fencing tokens, and a cache.

- `lock`: `RedisLock` (SET NX PX with a random owner token; release and extend as Lua
  compare-and-delete / compare-and-pexpire; fencing tokens from a chosen source: none,
  `RedisCounter` (INCR, lost with Redis's memory) or `fencing.Counter`) and its `LockGrant`.
- `fencing`: `fenced_write`, the resource's side: one PostgreSQL statement that refuses a
  write carrying a smaller fencing token than the last one it accepted; `Counter`, tokens
  from a committed row of the same database, which never repeat; `install` creates their
  tables in the current schema.
- `cache`: `SharedCache`, JSON values in Redis under versioned keys, one load per key
  across processes, and a bounded fallback to the loader when Redis is down or slow.
- `client`: `connect` (REDIS_URL, else the embedded server), `namespace` and `clear`
  (every key starts with the caller's prefix; nothing here ever flushes a database).

This part imports the ground floor and `cachequeue.cache` (keys, the in-flight record,
CacheBusy); never `cachequeue.queue` or `cachequeue.course`.
"""

from . import cache, client, fencing, lock
from .cache import SharedCache, SharedCacheTimeout, SharedStats
from .client import clear, connect, namespace, server_version
from .fencing import fenced_read, fenced_write
from .lock import LockGrant, RedisCounter, RedisLock

__all__ = [
    "LockGrant",
    "RedisCounter",
    "RedisLock",
    "SharedCache",
    "SharedCacheTimeout",
    "SharedStats",
    "cache",
    "clear",
    "client",
    "connect",
    "fenced_read",
    "fenced_write",
    "fencing",
    "lock",
    "namespace",
    "server_version",
]
