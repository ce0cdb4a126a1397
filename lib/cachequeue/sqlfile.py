"""Load named SQL blocks from the `sql/*.sql` files that each part of the package keeps.

A file holds blocks like this (the style of procrastinate's queries.sql):

    -- name: claim_one
    -- Claim the oldest runnable job and start a new attempt.
    WITH ... %(lease)s ...;

The first comment line after the name is the block's purpose; the rest is the query,
with psycopg `%(param)s` placeholders. SQL is never assembled with f-strings.

`load` gives a module its file as one `Queries` mapping, which is also the module's public
accessor: `query = sqlfile.load(__package__, "queries.sql")`, then `query("claim").sql` to
run, print or EXPLAIN a statement; an unknown name is a KeyError that lists the known ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Queries", "Query", "load", "parse", "read"]

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Query:
    name: str
    purpose: str
    sql: str

    def __str__(self) -> str:
        return self.sql


class Queries(Mapping[str, Query]):
    """The named blocks of one SQL file, in file order; `queries(name)` is `queries[name]`."""

    def __init__(self, queries: dict[str, Query], source: str) -> None:
        self._queries = dict(queries)
        self.source = source

    def __getitem__(self, name: str) -> Query:
        try:
            return self._queries[name]
        except KeyError:
            raise KeyError(f"no query {name!r} in {self.source}; it has "
                           f"{sorted(self._queries)}") from None

    __call__ = __getitem__

    def __iter__(self) -> Iterator[str]:
        return iter(self._queries)

    def __len__(self) -> int:
        return len(self._queries)

    def __repr__(self) -> str:
        return f"<Queries of {self.source}: {', '.join(self._queries)}>"


def read(package: str, filename: str) -> str:
    """The text of `sql/<filename>` inside `package`, e.g. read("cachequeue.queue", "queue.sql").

    Read through importlib.resources, so it works from a checkout and from an installed wheel.
    """
    return resources.files(package).joinpath("sql", filename).read_text(encoding="utf-8")


@cache
def load(package: str, filename: str) -> Queries:
    """The named blocks of `sql/<filename>` in `package`, parsed once per process."""
    return parse(read(package, filename), f"{package}:sql/{filename}")


def parse(text: str, source: str = "<text>") -> Queries:
    """Split SQL text into its named Queries; a duplicate or empty block is a ValueError that
    names `source`."""
    parts = _NAME.split(text)
    queries: dict[str, Query] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = body.strip().splitlines()
        purpose = lines[0].removeprefix("--").strip() if lines and lines[0].startswith("--") else ""
        sql = "\n".join(lines[1:] if purpose else lines).strip()
        if not sql:
            raise ValueError(f"{source}: query {name!r} is empty")
        if name in queries:
            raise ValueError(f"{source}: query {name!r} is defined twice")
        queries[name] = Query(name, purpose, sql)
    return Queries(queries, source)
