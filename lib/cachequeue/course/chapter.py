"""A chapter's schema, composed from the parts' own installs: the clock, the sample app, the queue.

    conn = db.connect()
    chapter.reset(conn, "ch03")   # drop and rebuild ch03 (ch03_test under `make test`)

`db.reset_schema` gives every schema the database clock; the sample application adds its
tenants, users and documents (`app.data.install`, rows by `data.load_sample`), and the queue
its tables (`queue.install`), and the course registers its own job kinds (`COURSE_KINDS`: a
production queue starts with none). A chapter that needs more (the fencing table, the `effect`
kind) installs it after this, in its set-up cell.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg

from .. import db, queue
from .app import data

__all__ = ["COURSE_KINDS", "INSTALLS", "install_kinds", "reset", "scratch"]

COURSE_KINDS = {
    "summarise": "summarise one version of a document",
    "noop": "do nothing (benchmarks and tests)",
    "flaky": "fail a given number of times, then succeed (retry exercises)",
    "always_fail": "always raise a retryable error (attempt cap exercises)",
}
"""The job kinds the course's chapters submit; the queue itself accepts none until registered."""


def install_kinds(conn: psycopg.Connection) -> None:
    """Register COURSE_KINDS in the connection's current schema (its queue must exist)."""
    queue.kinds.register(conn, COURSE_KINDS)


# Applied in this order, in one transaction, after the clock.
INSTALLS = (data.install, queue.install, install_kinds)


def reset(conn: psycopg.Connection, name: str) -> None:
    """Drop schema `name` (with db.schema_name's suffix) and rebuild it with INSTALLS."""
    db.reset_schema(conn, name, *INSTALLS)


@contextlib.contextmanager
def scratch(prefix: str, *, url: str | None = None) -> Iterator[tuple[psycopg.Connection, str]]:
    """A chapter schema of its own for one grader run: yields (a connection, the name).

    The name is `prefix` and a random part, so two runs never share tables; the schema is
    dropped when the block ends, whatever happened in it, and the connection closed."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    setup = db.connect(url=url)
    try:
        reset(setup, name)
        yield setup, name
    finally:
        db.drop_schema(setup, name)
        setup.close()
