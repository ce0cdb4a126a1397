"""The course's sample data set: two tenants, their users, documents with versions.

The CSV files in `data/` are the source; `frames()` reads them as pandas DataFrames and
`load_sample(conn)` copies them into the chapter schema's tables (see sql/schema.sql).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DATA_DIR", "TABLES", "frames", "load_sample", "rows"]

DATA_DIR = Path(__file__).resolve().parents[2] / "data"

# Load order respects the foreign keys.
TABLES = ("tenants", "users", "documents", "document_versions")


def _path(table: str) -> Path:
    if table not in TABLES:
        raise ValueError(f"unknown sample table {table!r}; expected one of {', '.join(TABLES)}")
    path = DATA_DIR / f"{table}.csv"
    if not path.is_file():
        raise FileNotFoundError(f"sample data file missing: {path} (is this a full checkout?)")
    return path


def rows(table: str) -> list[dict[str, str]]:
    """The rows of one sample table as dicts of strings, in file order."""
    with _path(table).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def frames() -> dict[str, pd.DataFrame]:
    """Every sample table as a DataFrame, keyed by table name."""
    import pandas as pd

    return {table: pd.read_csv(_path(table), encoding="utf-8") for table in TABLES}


def load_sample(conn: psycopg.Connection) -> dict[str, int]:
    """Copy every sample table into the connection's current schema; returns row counts.

    The tables must be empty (a fresh `db.reset_schema`); one transaction, all or nothing.
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
