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

Two more figures have no window, for an exporter (`service.exporter`): `attempts` (every
attempt so far per tenant label, kind and outcome; None while running) are counters, and
`durations` (successful attempts per duration bucket of DURATION_BUCKETS) a histogram, from
which a monitoring system computes any rate, ratio or quantile itself. They read every
attempt row, so their cost grows with the table; a scrape every 15 s or more is the use.

The busiest-N rule is right for the gauges (depth, oldest wait: each scrape is the whole
present state, whatever the labels) and wrong for counters: a tenant moving in or out of
the top N would carry its whole count into or out of "other", which a monitoring system
reads as a jump or a reset. So the two counter figures take their tenant labels from a
fixed list, `counter_tenants` (empty by default: every tenant's attempts count under
"other", and per-tenant counts are a query), which must not change while a process runs.

The tenant-label rule is one SQL function, `cq_tenant_label(tenant_id, top)`, which
`install(conn)` creates; `figure` and `snapshot` install it on first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.rows import dict_row

from .. import sqlfile
from ..checks import check_int, check_seconds

__all__ = ["COUNTERS", "DURATION_BUCKETS", "FIGURES", "OTHER", "figure", "install", "query", "snapshot",
           "top_tenants"]

query = sqlfile.load(__package__, "metrics.sql")
"""The named statements of `sql/metrics.sql`: `query("name").sql` to read, print or EXPLAIN."""
FIGURES = ("depth", "oldest_wait", "claim_rate", "completion_rate", "duration", "retry_ratio",
           "failure_ratio", "attempts", "durations")
OTHER = "other"  # the label of every tenant outside the top N
# Upper bounds (seconds) of the duration histogram's buckets; the last bucket is +Inf.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                    300.0)


def install(conn: psycopg.Connection) -> None:
    """Create `cq_tenant_label` in the connection's schema unless it exists. Safe to call
    from many processes at once (they take turns on an advisory lock)."""
    with conn.transaction():
        conn.execute(query("install_lock").sql)
        if not conn.execute(query("installed").sql).fetchone()[0]:
            conn.execute(query("install").sql)


def _ensure(conn: psycopg.Connection) -> None:
    if not conn.execute(query("installed").sql).fetchone()[0]:
        install(conn)


def top_tenants(conn: psycopg.Connection, limit: int) -> list[int]:
    """The `limit` tenants with the most pending and running jobs, busiest first."""
    rows = conn.execute(query("top_tenants").sql,
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
    _ensure(conn)
    return _read(conn, name, params)


def _read(conn: psycopg.Connection, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query(name).sql, params | {"bounds": list(DURATION_BUCKETS)}).fetchall()


COUNTERS = ("attempts", "durations")  # figures whose values only grow: fixed tenant labels


def snapshot(conn: psycopg.Connection, *, window: float = 60.0, top: int | None = 20,
             counter_tenants: Iterable[int] = ()) -> dict[str, list[dict[str, Any]]]:
    """Every figure, {name: rows}, read in one repeatable-read transaction so they agree.

    `top`: how many tenants keep their own label in the gauges and windowed figures (the
    busiest ones); the rest are "other". `counter_tenants`: the fixed tenant ids that keep
    their own label in the counter figures (COUNTERS; see the module docstring). `top=None`
    keeps every tenant everywhere.
    """
    params = {"window": check_seconds(window, "window")}
    top = None if top is None else check_int(top, "top", minimum=0)
    fixed = [check_int(t, "counter_tenants[]") for t in counter_tenants]
    _ensure(conn)
    with conn.transaction():
        conn.execute(query("repeatable_read").sql)
        busiest = None if top is None else top_tenants(conn, top)
        return {name: _read(conn, name, params | {
                    "top": (None if top is None else fixed) if name in COUNTERS else busiest})
                for name in FIGURES}
