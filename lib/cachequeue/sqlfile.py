"""Load named SQL blocks from the package's `sql/*.sql` files.

A file holds blocks like this (the style of procrastinate's queries.sql):

    -- name: claim_one
    -- Claim the oldest runnable job and start a new attempt.
    WITH ... %(lease)s ...;

The first comment line after the name is the block's purpose; the rest is the query,
with psycopg `%(param)s` placeholders. SQL is never assembled with f-strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Query", "load", "read"]

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Query:
    name: str
    purpose: str
    sql: str

    def __str__(self) -> str:
        return self.sql


def read(filename: str) -> str:
    """The text of one file in `cachequeue/sql/`."""
    return resources.files("cachequeue").joinpath("sql", filename).read_text(encoding="utf-8")


@cache
def load(filename: str) -> dict[str, Query]:
    """Parse `filename` into {name: Query}; a duplicate or empty block is an error."""
    text = read(filename)
    parts = _NAME.split(text)
    queries: dict[str, Query] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = body.strip().splitlines()
        purpose = lines[0].removeprefix("--").strip() if lines and lines[0].startswith("--") else ""
        sql = "\n".join(lines[1:] if purpose else lines).strip()
        if not sql:
            raise ValueError(f"{filename}: query {name!r} is empty")
        if name in queries:
            raise ValueError(f"{filename}: query {name!r} is defined twice")
        queries[name] = Query(name, purpose, sql)
    return queries
