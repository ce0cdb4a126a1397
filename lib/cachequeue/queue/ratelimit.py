"""A global rate limit per job kind, enforced in the database (a vendor's quota).

A vendor allows R calls per second for the whole account, not per worker: a limit kept in
each worker's memory lets N workers make N x R calls. Here the bucket is one row of
`rate_limits`; `take` refills it for the time passed (database clock, `cq_now()`) and takes
whole tokens under the row's lock, so every process on every host draws from it.

    ratelimit.install(conn)
    ratelimit.set_limit(conn, "summarise", per_second=2, burst=2)
    claims = ratelimit.claim_limited(conn, "summarise", 8)   # at most the tokens available

A job is claimed only with a token in hand, so over any interval of t seconds at most
burst + R * t jobs of the kind start. Tokens not used (fewer jobs than tokens) go back.
SQL in `sql/ratelimit.sql`.
"""

from __future__ import annotations

import psycopg

from .. import sqlfile
from ..checks import check_finite, check_int, check_text
from .jobs import Claim, claim_many

__all__ = ["claim_limited", "give_back", "install", "set_limit", "take"]

_QUERIES = sqlfile.load(__package__, "ratelimit.sql")


def install(conn: psycopg.Connection) -> None:
    """Create the rate_limits table unless it exists."""
    conn.execute(_QUERIES["install"].sql)


def set_limit(conn: psycopg.Connection, kind: str, *, per_second: float, burst: float = 1.0) -> None:
    """Allow `per_second` jobs of `kind` per second, with up to `burst` at once. Replaces
    any bucket the kind had; the new one starts full at cq_now()."""
    per_second = check_finite(per_second, "per_second", above=0)
    burst = check_finite(burst, "burst", minimum=1)
    conn.execute(_QUERIES["set_limit"].sql,
                 {"kind": check_text(kind, "kind"), "per_second": per_second, "burst": burst})


def take(conn: psycopg.Connection, kind: str, want: int) -> int:
    """Take up to `want` tokens of `kind`'s bucket; how many were granted (0 when empty).
    A kind without a bucket has no limit: all `want` are granted."""
    row = conn.execute(_QUERIES["take"].sql, {"kind": check_text(kind, "kind"),
                                              "want": check_int(want, "want", minimum=0)}).fetchone()
    return want if row[0] is None else row[0]


def give_back(conn: psycopg.Connection, kind: str, count: int) -> None:
    """Return `count` unused tokens (never above the burst)."""
    conn.execute(_QUERIES["give_back"].sql, {"kind": check_text(kind, "kind"),
                                             "count": check_int(count, "count", minimum=0)})


def claim_limited(conn: psycopg.Connection, kind: str, limit: int, *, lease: float = 30.0,
                  worker: str | None = None) -> list[Claim]:
    """Claim up to `limit` jobs of `kind`, but no more than the tokens its bucket grants."""
    granted = take(conn, kind, check_int(limit, "limit", minimum=1))
    if granted == 0:
        return []
    claims = claim_many(conn, granted, lease=lease, kinds=[kind], worker=worker)
    if len(claims) < granted:
        give_back(conn, kind, granted - len(claims))
    return claims
