"""A chapter's schema, composed from the parts' own installs: the clock, the sample app, the queue.

    conn = db.connect()
    chapter.reset(conn, "ch03")   # drop and rebuild ch03 (ch03_test under `make test`)

`db.reset_schema` gives every schema the database clock; the sample application adds its
tenants, users and documents (`app.data.install`, rows by `data.load_sample`), and the queue
its tables (`queue.install`). A chapter that needs more (the fencing table, the `effect`
kind) installs it after this, in its set-up cell.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg

from .. import db, queue
from .app import data

__all__ = ["INSTALLS", "reset", "scratch"]

# Applied in this order, in one transaction, after the clock.
INSTALLS = (data.install, queue.install)


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
