"""The workers table: who is running, since when, when last heard from, and what it holds.

The table is not part of a fresh chapter schema: `install(conn)` creates it, and every
`worker.Worker` calls that when it first connects. A worker registers itself when it
starts, calls `beat` on every heartbeat (which also renews the leases of every job it
holds, in one statement), and `deregister`s when it stops on purpose. `status(conn)` is the operator's view: one row per
worker with the running jobs locked in its name. Statements are in `sql/registry.sql`.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable

import psycopg
from psycopg.rows import dict_row

from .. import sqlfile
from ..checks import check_instance, check_int, check_text
from ..errors import ForeignClaim
from .jobs import BATCH_PLAN, Claim
from .limits import check_lease

__all__ = ["beat", "deregister", "install", "register", "status"]

_QUERIES = sqlfile.load(__package__, "registry.sql")


def install(conn: psycopg.Connection) -> None:
    """Create the workers table and the worker_status view in the connection's schema
    unless they exist (`sql/registry_table.sql`). Safe to call from many workers at once."""
    with conn.transaction():
        conn.execute(sqlfile.read(__package__, "registry_table.sql"))


def register(conn: psycopg.Connection, name: str, *, pid: int | None = None,
             host: str | None = None) -> None:
    """Insert or refresh the row of worker `name` (this process by default).

    Names are unique: a worker restarted under the same name takes over the row. The same
    process registering again (after a lost connection) keeps its start time.
    """
    conn.execute(_QUERIES["register"].sql, {
        "name": check_text(name, "name"),
        "pid": os.getpid() if pid is None else check_int(pid, "pid", minimum=1),
        "host": socket.gethostname() if host is None else check_text(host, "host")})


def beat(conn: psycopg.Connection, name: str, claims: Iterable[Claim],
         lease: float) -> set[uuid.UUID]:
    """Renew the lease of every claim still held, record the worker's heartbeat, and return
    the lease tokens still held: a claim whose token is missing lost its lease (expired,
    taken over, cancelled) and must not publish a result. One statement for all claims."""
    claims = [check_instance(c, "each claim", Claim) for c in claims]
    row = conn.execute(_QUERIES["beat"].sql, {
        "name": check_text(name, "name"), "lease": check_lease(lease),
        "job_ids": [c.job_id for c in claims], "lease_tokens": [c.lease_token for c in claims],
        "schema": claims[0].schema if claims else None}, prepare=BATCH_PLAN).fetchone()
    foreign = [c.schema for c in claims if c.schema != row[1]]
    if foreign:
        raise ForeignClaim(f"claims from schema {foreign[0]!r} used on a connection to "
                           f"{row[1]!r}; no lease was renewed")
    return set(row[0])


def deregister(conn: psycopg.Connection, name: str, *, pid: int | None = None) -> None:
    """Mark worker `name` (of this process by default) as stopped on purpose."""
    conn.execute(_QUERIES["deregister"].sql, {
        "name": check_text(name, "name"),
        "pid": os.getpid() if pid is None else check_int(pid, "pid", minimum=1)})


def status(conn: psycopg.Connection) -> list[dict]:
    """One dict per worker: name, pid, host, started_at, last_heartbeat, stopped_at,
    jobs_in_hand and job_ids (running jobs locked in its name, expired leases included)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_QUERIES["status"].sql).fetchall()
