"""The in-process cache: production-shaped, with no teaching apparatus in it.

- `LoadingCache`: TTL, a capacity bound (FIFO or LRU), request coalescing (one load per key
  in flight, shared by every waiter), a cap on distinct loads in flight (`CacheBusy`), failed
  loads never cached, opt-in negative caching (`NotFound` with `negative_ttl`).
- `EarlyRefreshCache`: the same, plus probabilistic early refresh (XFetch).
- `keys`: `cache_key` (readable, deterministic, injective keys with every dimension of the
  result; private inputs only as a hash), `parse_key`, `private_digest`.

This part imports only the ground floor (`cachequeue.checks`, `errors`); never
`cachequeue.queue` or `cachequeue.course`.
"""

from . import keys
from .keys import cache_key, parse_key, private_digest
from .loading import POLICIES, CacheBusy, CacheStats, LoadingCache, NotFound
from .xfetch import EarlyRefreshCache

__all__ = [
    "POLICIES",
    "CacheBusy",
    "CacheStats",
    "EarlyRefreshCache",
    "LoadingCache",
    "NotFound",
    "cache_key",
    "keys",
    "parse_key",
    "private_digest",
]
