"""The fair claim: fewest running first, with an optional per-tenant cap (Q12).

The plain claim (`jobs.claim_many`) takes due jobs oldest first, so a tenant that queued
10,000 jobs a minute ago fills every worker until they are all done, and a tenant that
queued 10 just after waits behind them. `claim_fair` takes the same expired leases first,
then orders pending jobs by the place each would take among its tenant's jobs in flight
(running + its rank in the tenant's queue): a tenant with nothing running goes first, and
`tenant_cap` stops any tenant from holding more than that many running jobs.

    fairness.install(conn)                       # once: the two indexes it reads
    claims = fairness.claim_fair(conn, 4, lease=30, tenant_cap=2)

It returns the same `jobs.Claim`s, so heartbeat, finish, fail and release are unchanged.
The price is one index probe per tenant with pending jobs (a skip scan over `jobs_fair`);
the statement is in `sql/fairness.sql`, the indexes in `sql/fairness_indexes.sql`.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from psycopg.pq import TransactionStatus

from .. import sqlfile
from ..checks import check_int, check_text
from .jobs import Claim
from .jobs import query as jobs_query
from .limits import check_kinds, check_lease

__all__ = ["claim_fair", "install", "query"]

_QUERIES = sqlfile.load(__package__, "fairness.sql")


def query(name: str = "claim_fair") -> sqlfile.Query:
    """The fair claim's statement (to read or EXPLAIN it)."""
    return _QUERIES[name]


def install(conn: psycopg.Connection) -> None:
    """Create the fair claim's two indexes unless they exist. Safe to call from many
    workers at once; a fresh chapter schema does not have them."""
    with conn.transaction():
        conn.execute(sqlfile.read(__package__, "fairness_indexes.sql"))


def claim_fair(conn: psycopg.Connection, limit: int, *, lease: float = 30.0,
               kinds: Iterable[str] | None = None, worker: str | None = None,
               tenant_cap: int | None = None) -> list[Claim]:
    """Claim up to `limit` jobs in ONE statement, expired leases first, then fairly.

    Fair: among due pending jobs, those whose tenant has the fewest jobs running (counting
    the ones this claim takes) come first; ties go to the oldest run_after. With
    `tenant_cap`, a tenant already running that many jobs gets none. Everything else (lease,
    attempt row, kinds, synchronous_commit) is as in `jobs.claim_many`. Needs install().
    """
    params = {"limit": check_int(limit, "limit", minimum=1), "lease": check_lease(lease),
              "kinds": check_kinds(kinds), "worker": check_text(worker, "worker", optional=True),
              "tenant_cap": None if tenant_cap is None else check_int(tenant_cap, "tenant_cap",
                                                                      minimum=1)}
    sql = _QUERIES["claim_fair"].sql
    if conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE:
        rows = conn.execute(sql, params).fetchall()
    else:  # inside the caller's transaction: keep the caller's commit as durable as it was
        mode = conn.execute(jobs_query("commit_mode").sql).fetchone()[0]
        rows = conn.execute(sql, params).fetchall()
        conn.execute(jobs_query("set_commit_mode").sql, {"mode": mode})
    return [Claim(*row) for row in rows]
