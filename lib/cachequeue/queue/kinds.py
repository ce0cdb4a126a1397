"""The kinds of work a queue accepts: rows of `job_kinds`, registered by whoever runs the work.

    kinds.register(conn, {"resize_image": "resize one uploaded image"})   # 1: newly registered
    kinds.registered(conn)                                                # {"resize_image": ...}

A new queue (`queue.install`) accepts no kind at all: `jobs.submit` of a kind nobody
registered raises UnknownKind, so a typo never queues work that no worker would run. The
course registers its own kinds when it builds a chapter's schema (`course.chapter.reset`),
and `cachequeue worker` / `cachequeue serve --workers` register the kinds of their handlers.
Registering is idempotent (a kind already there keeps its description) and safe from many
processes at once.
"""

from __future__ import annotations

from collections.abc import Mapping

import psycopg

from .. import sqlfile
from ..checks import check_text

__all__ = ["MAX_KINDS", "MAX_KIND_CHARS", "query", "register", "registered"]

MAX_KIND_CHARS = 200  # characters of a kind's name
MAX_DESCRIPTION_CHARS = 1000
MAX_KINDS = 1000  # kinds registered by one call

query = sqlfile.load(__package__, "kinds.sql")
"""The named statements of `sql/kinds.sql`: `query("register").sql` to read or print."""


def register(conn: psycopg.Connection, kinds: Mapping[str, str]) -> int:
    """Register each {kind: description} unless it is there; the number newly registered.
    Raises TypeError or ValueError, writing nothing, for anything but a mapping of 1 to
    MAX_KINDS non-empty names (at most MAX_KIND_CHARS characters, no NUL) to non-empty
    descriptions."""
    if not isinstance(kinds, Mapping):
        raise TypeError(f"kinds must be a mapping {{kind: description}}, got {type(kinds).__name__}")
    if not 1 <= len(kinds) <= MAX_KINDS:
        raise ValueError(f"kinds must name 1 to {MAX_KINDS} kinds, got {len(kinds)}")
    names, descriptions = [], []
    for kind, description in kinds.items():
        names.append(check_text(kind, "kind", limit=MAX_KIND_CHARS))
        descriptions.append(check_text(description, f"the description of {kind!r}",
                                       limit=MAX_DESCRIPTION_CHARS))
        if "\x00" in kind or "\x00" in description:
            raise ValueError(f"kind {kind!r} and its description must not contain NUL characters")
    return conn.execute(query("register").sql,
                        {"kinds": names, "descriptions": descriptions}).fetchone()[0]


def registered(conn: psycopg.Connection) -> dict[str, str]:
    """Every registered kind with its description, by name."""
    return dict(conn.execute(query("registered").sql).fetchall())
