"""The course's sample data set: two tenants, their users, documents with versions.

The CSV files are package data (`cachequeue/course/data/*.csv`, linked from the checkout's
`data/` folder), read through importlib.resources so an installed wheel has them too.
`frames()` reads them as pandas DataFrames and `load_sample(conn)` copies them into the
chapter schema's tables (see sql/sample.sql).
"""

from __future__ import annotations

import csv
import io
from importlib import resources
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from ... import sqlfile
from ...checks import check_choice

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CREDENTIALS", "TABLES", "frames", "install", "load_sample", "read_csv", "rows"]

# Load order respects the foreign keys.
TABLES = ("tenants", "users", "documents", "document_versions")
# Columns that are credentials (the sample users' API tokens, chapter 07): the files and the
# tables carry them, but frames() leaves them out, so a table shown in a notebook shows who
# the users are, not how to log in as them.
CREDENTIALS = {"users": ("api_token",)}


def read_csv(table: str) -> str:
    """The text of one sample table's CSV file."""
    check_choice(table, "table", TABLES)
    resource = resources.files("cachequeue.course").joinpath("data", f"{table}.csv")
    try:
        return resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"sample data file missing: {resource} (reinstall the course package)") from None


def rows(table: str) -> list[dict[str, str]]:
    """The rows of one sample table as dicts of strings, in file order."""
    return list(csv.DictReader(io.StringIO(read_csv(table), newline="")))


def frames() -> dict[str, pd.DataFrame]:
    """Every sample table as a DataFrame, keyed by table name (without CREDENTIALS columns)."""
    import pandas as pd

    return {table: pd.read_csv(io.StringIO(read_csv(table))).drop(
                columns=list(CREDENTIALS.get(table, ())))
            for table in TABLES}


def install(conn: psycopg.Connection) -> None:
    """Create the sample tables (`sql/sample.sql`: tenants, users, documents, versions) in
    the connection's current schema; they must not exist yet (a fresh schema)."""
    conn.execute(sqlfile.read(__package__, "sample.sql"))


def load_sample(conn: psycopg.Connection) -> dict[str, int]:
    """Copy every sample table into the connection's current schema; returns row counts.

    The tables must be empty (a fresh `chapter.reset`); one transaction, all or nothing.
    """
    counts = {}
    with conn.transaction():
        for table in TABLES:
            data = rows(table)
            columns = list(data[0])
            copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            with conn.cursor().copy(copy) as cp:
                for row in data:
                    cp.write_row([row[c] for c in columns])
            counts[table] = len(data)
    return counts
