"""Per-tenant limits of the service: a submit rate (in the database) and open event streams.

Chapter 08 teaches both for workers (fair claims, rate limits); this is the same idea at the
service's door, so one tenant cannot take the service from the others:

- **Submit rate**: a token bucket per tenant (`submit_rate` per second, up to
  `submit_burst` at once), kept in one row of the schema's `tenant_submit_buckets` table,
  the way `queue.ratelimit` keeps a kind's bucket: `admit_submit(conn, tenant_id)` refills
  the row for the time passed (database clock, `cq_now()`) and takes a token under the
  row's lock, so every process of the service draws from the same bucket (N processes
  allow the rate, not N times it). A submit without a token is answered 429
  `rate_limited` with Retry-After (the whole seconds until the next token), and the take
  writes nothing. `submit_job` takes the token in the submit's own transaction: a submit
  refused later (an unknown kind, the pending cap) rolls its token back, and the bucket
  costs no commit of its own. `install(conn)` creates the table (IF NOT EXISTS) and the
  index the pending cap counts with; the service's pool does so on its first connection.
- **Open event streams**: at most `max_streams` per tenant in this process; the next
  opening is 429 `too_many_streams` (before its 200), so one tenant's 500 idle streams do
  not hold the process's connections and memory. Openings that run at the same time may
  overshoot by the number of them in flight (the count is taken when a stream starts).

0 turns a limit off. Time is the database's (`cq_now()`), so a test steps it with
`db.set_clock` on the connection it passes.
"""

from __future__ import annotations

import math

import psycopg

from .. import sqlfile
from ..checks import check_finite, check_int
from ..queue import fairness
from .problems import Problem

__all__ = ["TenantLimits", "install"]

_QUERIES = sqlfile.load(__package__, "service.sql")


def install(conn: psycopg.Connection) -> None:
    """Create what the per-tenant limits read, unless it exists (safe from many processes at
    once: under advisory locks): the submit buckets' table, and the fair claim's indexes
    (`queue.fairness.install`), which the pending cap's count reads. Without `jobs_fair`
    that count, `state = 'pending' AND tenant_id = ...`, is a scan of the jobs table on
    every submit (66 ms against 2.7 ms for 11,600 pending jobs among 200,000 finished ones,
    measured in this checkout); with it, an index-only scan that stops at the cap. The
    indexes are created only when missing: CREATE INDEX IF NOT EXISTS would take a SHARE
    lock on jobs, and wait for every submit in flight, even when they exist. Built here on
    a large table, the index holds submits for as long as the build takes, as the fair
    workers' own install does (`cachequeue worker --fair`): create it beforehand there,
    with CREATE INDEX CONCURRENTLY and the same definition (queue/sql/fairness_indexes.sql)."""
    with conn.transaction():
        conn.execute(_QUERIES["install_lock"].sql)
        conn.execute(_QUERIES["install_buckets"].sql)
        missing = conn.execute(_QUERIES["fair_index_missing"].sql).fetchone()[0]
    if missing:
        fairness.install(conn)


class TenantLimits:
    """The buckets and stream counts (see the module docstring)."""

    def __init__(self, *, submit_rate: float = 100.0, submit_burst: float = 200.0,
                 max_streams: int = 100) -> None:
        self.submit_rate = check_finite(submit_rate, "submit_rate", minimum=0)
        self.submit_burst = check_finite(submit_burst, "submit_burst", minimum=1)
        self.max_streams = check_int(max_streams, "max_streams", minimum=0, maximum=100_000)
        self._streams: dict[int, int] = {}
        self.refused = {"rate_limited": 0, "too_many_streams": 0}

    def admit_submit(self, conn: psycopg.Connection, tenant_id: int) -> None:
        """Take one token of the tenant's bucket in the database; 429 `rate_limited` when
        none is left (nothing written then). In the caller's transaction, if it has one."""
        if not self.submit_rate:
            return
        tenant = {"tenant_id": check_int(tenant_id, "tenant_id", minimum=1),
                  "rate": self.submit_rate, "burst": self.submit_burst}
        if conn.execute(_QUERIES["take_submit_token"].sql, tenant).fetchone() is not None:
            return
        tokens = conn.execute(_QUERIES["submit_tokens"].sql, tenant).fetchone()[0]
        self.refused["rate_limited"] += 1
        wait = max(1, math.ceil((1.0 - tokens) / self.submit_rate))
        raise Problem(429, "rate_limited",
                      f"this tenant may submit {self.submit_rate:g} jobs per second "
                      f"(bursts of {self.submit_burst:g}); try again in {wait} s",
                      {"Retry-After": str(wait)})

    def check_stream(self, tenant_id: int, retry_after: int) -> None:
        """429 `too_many_streams` when the tenant has max_streams open in this process."""
        if self.max_streams and self._streams.get(tenant_id, 0) >= self.max_streams:
            self.refused["too_many_streams"] += 1
            raise Problem(429, "too_many_streams",
                          f"this tenant has {self.max_streams} event streams open, the most "
                          "allowed; close one first", {"Retry-After": str(retry_after)})

    def stream_started(self, tenant_id: int) -> None:
        self._streams[tenant_id] = self._streams.get(tenant_id, 0) + 1

    def stream_ended(self, tenant_id: int) -> None:
        left = self._streams.get(tenant_id, 0) - 1
        if left > 0:
            self._streams[tenant_id] = left
        else:
            self._streams.pop(tenant_id, None)

    def streams(self, tenant_id: int) -> int:
        return self._streams.get(tenant_id, 0)
