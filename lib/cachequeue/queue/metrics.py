"""The queue's operating figures, read from its tables: one named SQL query per figure.

    figures = metrics.snapshot(conn, window=60, top=20)
    figures["depth"]       # [{"tenant": "3", "kind": "noop", "pending": 12, "running": 2}, ...]

Figures (`FIGURES`, queries in `sql/metrics.sql`): depth (pending and due, running),
oldest_wait (seconds), claim_rate and completion_rate (per second over `window`),
duration (p50, p95 seconds of successful attempts), retry_ratio and failure_ratio. Each row
carries a `tenant` label and the job `kind`.

Label cardinality is bounded: with `top=N` only the N tenants with the most pending and
running jobs keep their own label and every other tenant is counted under `"other"`, so
10,000 tenants give at most N + 1 tenant labels per kind. A monitoring system stores one
series per label set; an unbounded tenant label is how it runs out of memory. `top=None`
keeps every tenant (for a table in a notebook, not for an exporter).
The job tables are the record: these figures need no counter kept in memory, so every
process reading them agrees, and a restart loses nothing.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

from .. import sqlfile
from ..checks import check_int, check_seconds

__all__ = ["FIGURES", "OTHER", "figure", "query", "snapshot", "top_tenants"]

_QUERIES = sqlfile.load(__package__, "metrics.sql")
FIGURES = ("depth", "oldest_wait", "claim_rate", "completion_rate", "duration", "retry_ratio",
           "failure_ratio")
OTHER = "other"  # the label of every tenant outside the top N


def query(name: str) -> sqlfile.Query:
    """The named statement of `sql/metrics.sql` (to read or EXPLAIN it)."""
    try:
        return _QUERIES[name]
    except KeyError:
        raise KeyError(f"no query {name!r} in metrics.sql; it has {sorted(_QUERIES)}") from None


def top_tenants(conn: psycopg.Connection, limit: int) -> list[int]:
    """The `limit` tenants with the most pending and running jobs, busiest first."""
    rows = conn.execute(_QUERIES["top_tenants"].sql,
                        {"limit": check_int(limit, "limit", minimum=0)}).fetchall()
    return [row[0] for row in rows]


def figure(conn: psycopg.Connection, name: str, *, window: float = 60.0,
           top: list[int] | None = None) -> list[dict[str, Any]]:
    """One figure's rows; `top` is the list of tenant ids that keep their own label (None:
    all of them). Use snapshot() to pick the top tenants and read every figure."""
    if name not in FIGURES:
        raise ValueError(f"figure must be one of {FIGURES}, got {name!r}")
    params = {"window": check_seconds(window, "window"),
              "top": None if top is None else [check_int(t, "top[]") for t in top]}
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_QUERIES[name].sql, params).fetchall()


def snapshot(conn: psycopg.Connection, *, window: float = 60.0,
             top: int | None = 20) -> dict[str, list[dict[str, Any]]]:
    """Every figure, {name: rows}, read in one repeatable-read transaction so they agree.

    `top`: how many tenants keep their own label (the busiest ones); the rest are "other".
    None keeps every tenant.
    """
    with conn.transaction():
        conn.execute(_QUERIES["repeatable_read"].sql)
        tenants = None if top is None else top_tenants(conn, check_int(top, "top", minimum=0))
        return {name: figure(conn, name, window=window, top=tenants) for name in FIGURES}
