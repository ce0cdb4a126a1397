"""A finished-jobs history kept two ways: a plain table emptied row by row, and one partitioned
by day whose old partitions are dropped (chapter 14).

    rotation.create(conn, start=day0, days=3)       # both tables, one partition per day
    rotation.fill(conn, start=day0, days=3, per_day=5000)
    deleted, removed = rotation.delete_before(conn, day0 + timedelta(days=1))
    rotation.drop_before(conn, day0 + timedelta(days=1))

Deleting a day from the plain table makes a dead row version per row, which VACUUM must
remove, and the table keeps its size (the space is reused by later rows, not returned).
Dropping the day's partition removes a file: no dead rows, the space is returned at once.
The price of partitions: each must exist before its rows arrive (a row with no partition is
refused), and a query without a condition on the partition key reads every partition.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import psycopg
from psycopg import sql

from ... import sqlfile
from ...checks import check_autocommit_idle, check_instance, check_int

__all__ = ["counts", "create", "delete_before", "drop_before", "fill", "partition_name", "sizes"]

_QUERIES = sqlfile.load(__package__, "rotation.sql")
_REMOVED = re.compile(r"tuples: (\d+) removed")
MAX_DAYS = 366
MAX_ROWS = 1_000_000


def partition_name(day: datetime) -> str:
    """The partition that holds the rows of `day` (UTC): history_YYYYMMDD."""
    return "history_" + check_instance(day, "day", datetime).strftime("%Y%m%d")


def create(conn: psycopg.Connection, *, start: datetime, days: int) -> list[str]:
    """Both tables, and one partition per day from `start` (midnight); the partitions' names."""
    check_instance(start, "start", datetime)
    count = check_int(days, "days", minimum=1, maximum=MAX_DAYS)
    names = []
    with conn.transaction():
        conn.execute(_QUERIES["create"].sql)
        for n in range(count):
            low = start + timedelta(days=n)
            names.append(partition_name(low))
            conn.execute(sql.SQL("CREATE TABLE {} PARTITION OF history_parted "
                                 "FOR VALUES FROM ({}) TO ({})").format(
                sql.Identifier(names[-1]), sql.Literal(low), sql.Literal(low + timedelta(days=1))))
    return names


def fill(conn: psycopg.Connection, *, start: datetime, days: int, per_day: int) -> int:
    """`per_day` rows for each day into both tables (one statement); the rows per table."""
    check_instance(start, "start", datetime)
    count = check_int(days, "days", minimum=1, maximum=MAX_DAYS)
    each = check_int(per_day, "per_day", minimum=1, maximum=MAX_ROWS // count)
    conn.execute(_QUERIES["fill"].sql, {"start": start, "days": count, "per_day": each})
    return count * each


def sizes(conn: psycopg.Connection) -> tuple[int, int, int]:
    """(plain table bytes, partitioned table bytes over all partitions, partitions)."""
    return conn.execute(_QUERIES["sizes"].sql).fetchone()


def counts(conn: psycopg.Connection) -> tuple[int, int]:
    """(rows in the plain table, rows in the partitioned one)."""
    return conn.execute(_QUERIES["counts"].sql).fetchone()


def delete_before(conn: psycopg.Connection, before: datetime) -> tuple[int, int]:
    """Delete the plain table's rows older than `before`, then VACUUM it: (rows deleted,
    dead row versions VACUUM removed)."""
    check_instance(before, "before", datetime)
    check_autocommit_idle(conn, "rotation.delete_before")
    deleted = conn.execute(_QUERIES["delete_before"].sql, {"before": before}).rowcount
    messages: list[str] = []

    def collect(diagnostic: psycopg.errors.Diagnostic) -> None:
        messages.append(diagnostic.message_primary or "")

    conn.add_notice_handler(collect)
    try:
        conn.execute(_QUERIES["vacuum_plain"].sql)
    finally:
        conn.remove_notice_handler(collect)
    found = [int(m.group(1)) for text in messages if (m := _REMOVED.search(text))]
    return deleted, found[0] if found else 0


def drop_before(conn: psycopg.Connection, before: datetime) -> list[str]:
    """Drop every partition whose whole day is older than `before`; their names."""
    check_instance(before, "before", datetime)
    names = [name for (name,) in conn.execute(_QUERIES["partitions"].sql)]
    dropped = []
    with conn.transaction():
        for name in names:
            day = datetime.strptime(name.removeprefix("history_"), "%Y%m%d").replace(
                tzinfo=before.tzinfo)
            if day + timedelta(days=1) <= before:
                conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))
                dropped.append(name)
    return dropped
