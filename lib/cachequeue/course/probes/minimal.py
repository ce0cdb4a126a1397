"""The minimal one-statement claim: `UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)`.

Chapter 03 runs it before it prints the production `claim` statement of `queue/sql/queries.sql`,
which is the same statement plus lease expiry, attempt limits, attempt rows and fairness.
`query("minimal_claim").sql` is its text (`sql/minimal.sql`).
"""

from __future__ import annotations

import uuid

import psycopg

from ... import sqlfile
from ...checks import check_instance, check_text
from ...queue.limits import check_lease

__all__ = ["claim", "query"]

query = sqlfile.load(__package__, "minimal.sql")
"""The named statements of `sql/minimal.sql`: `query("minimal_claim").sql`."""


def claim(conn: psycopg.Connection, *, worker: str, lease: float = 30.0) -> tuple[int, uuid.UUID] | None:
    """Claim the oldest due pending job for `worker`: (job id, lease token), or None if none is due."""
    check_instance(conn, "conn", psycopg.Connection)
    params = {"worker": check_text(worker, "worker"), "lease": check_lease(lease)}
    row = conn.execute(query("minimal_claim").sql, params).fetchone()
    return None if row is None else (row[0], row[1])
