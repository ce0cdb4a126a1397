"""The queue's health: who holds the MVCC horizon back, how many dead row versions the jobs
table carries, and an alert when either passes a threshold.

Every claim and every finish is an UPDATE, so each job leaves two dead versions of its row
behind (and its attempt row one). VACUUM removes a dead version only when no snapshot or
transaction that might still see it is left: the oldest of those is the horizon. One
session idle in transaction, a long report, a replication slot or a forgotten prepared
transaction holds it for the whole database, and the queue's table fills with dead rows
that every claim has to step over.

    for holder in health.horizon_holders(conn):
        print(holder.source, holder.pid, holder.xmin_age, holder.seconds)
    table = health.table_health(conn)
    problems = health.alerts(conn, max_xmin_age=100_000, max_dead_tuples=50_000)

`n_dead_tup` and `n_live_tup` are PostgreSQL's statistics: each backend reports its counts
at the end of a transaction, at most about once a second, and VACUUM resets them, so they
lag by a moment and are estimates, good for a dashboard and an alert; count exactly with
VACUUM (VERBOSE) or the pgstattuple extension.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import sql

from .. import sqlfile
from ..checks import check_bool, check_finite, check_int

__all__ = ["Alert", "Holder", "TableHealth", "alerts", "horizon_holders", "query",
           "table_health", "tune_autovacuum"]

query = sqlfile.load(__package__, "health.sql")
"""The named statements of `sql/health.sql`: `query("name").sql` to read, print or EXPLAIN."""

MAX_HOLDERS = 1000
MAX_XID_AGE = 2**31  # transaction ids wrap around at 2^31 of age


@dataclass(frozen=True)
class Holder:
    """One thing that holds the horizon: `source` is 'backend', 'replication_slot' or
    'prepared'; `pid` the backend (None for an inactive slot or a prepared transaction);
    `name` the application name or user, the slot or the prepared transaction's gid;
    `xmin_age` how many transaction ids old the oldest row version it may still see is;
    `seconds` how long its transaction has been open (None for a slot)."""

    source: str
    pid: int | None
    name: str
    state: str | None
    xmin_age: int
    seconds: float | None
    query: str | None


@dataclass(frozen=True)
class TableHealth:
    """The jobs table of the connection's schema: statistics (estimates, see the module
    docstring), sizes in bytes, and autovacuum's trigger for this table:
    `vacuum_threshold + vacuum_scale_factor * reltuples` dead tuples."""

    live_tuples: int
    dead_tuples: int
    table_bytes: int
    index_bytes: int
    vacuum_threshold: float
    vacuum_scale_factor: float
    reltuples: float
    last_vacuum: datetime | None

    @property
    def autovacuum_trigger(self) -> int:
        """Dead tuples after which autovacuum vacuums this table (per-table settings win)."""
        return int(self.vacuum_threshold + self.vacuum_scale_factor * self.reltuples)


@dataclass(frozen=True)
class Alert:
    """One threshold passed: `metric` ('xmin_age' or 'dead_tuples'), the value, the
    threshold, and the holder to look at first (for 'xmin_age')."""

    metric: str
    value: int
    threshold: int
    holder: Holder | None = None


def horizon_holders(conn: psycopg.Connection, *, limit: int = 10) -> list[Holder]:
    """What holds this database's horizon back, oldest first (at most `limit`)."""
    params = {"limit": check_int(limit, "limit", minimum=1, maximum=MAX_HOLDERS)}
    return [Holder(*row) for row in conn.execute(query["horizon_holders"].sql, params)]


def table_health(conn: psycopg.Connection) -> TableHealth:
    """The jobs table of the connection's schema; LookupError if the schema has none."""
    row = conn.execute(query["table_health"].sql).fetchone()
    if row is None:
        raise LookupError("no jobs table in the current schema (queue.install first)")
    return TableHealth(*row)


def tune_autovacuum(conn: psycopg.Connection, *, threshold: int, scale_factor: float,
                    enabled: bool = True) -> TableHealth:
    """Per-table autovacuum settings for the jobs table of the connection's schema: vacuum
    once `threshold + scale_factor * rows` tuples are dead. A hot queue table wants a fixed
    threshold (scale_factor 0): the default 0.2 waits for a fifth of the table to be dead.
    The price is more frequent vacuums (I/O); no setting helps while the horizon is held.
    Returns the table's health with the new settings."""
    params = {"threshold": check_int(threshold, "threshold", minimum=0, maximum=2**31 - 1),
              "scale_factor": check_finite(scale_factor, "scale_factor", minimum=0),
              "enabled": check_bool(enabled, "enabled")}
    if params["scale_factor"] > 100:
        raise ValueError(f"scale_factor must be <= 100, got {scale_factor!r}")
    table_health(conn)  # LookupError before anything is written
    conn.execute(sql.SQL(query["tune_autovacuum"].sql).format(
        threshold=sql.Literal(params["threshold"]),
        scale_factor=sql.Literal(params["scale_factor"]),
        enabled=sql.Literal(params["enabled"])))
    return table_health(conn)


def alerts(conn: psycopg.Connection, *, max_xmin_age: int,
           max_dead_tuples: int) -> list[Alert]:
    """The thresholds passed now: the oldest holder's xmin age above `max_xmin_age`, the
    jobs table's dead tuples above `max_dead_tuples`. An empty list is healthy."""
    xid_limit = check_int(max_xmin_age, "max_xmin_age", minimum=1, maximum=MAX_XID_AGE)
    dead_limit = check_int(max_dead_tuples, "max_dead_tuples", minimum=0)
    found = []
    oldest = horizon_holders(conn, limit=1)
    if oldest and oldest[0].xmin_age > xid_limit:
        found.append(Alert("xmin_age", oldest[0].xmin_age, xid_limit, oldest[0]))
    table = table_health(conn)
    if table.dead_tuples > dead_limit:
        found.append(Alert("dead_tuples", table.dead_tuples, dead_limit))
    return found
