"""The fair claim: fewest running first, with an optional per-tenant cap (Q12).

The plain claim (`jobs.claim_many`) takes due jobs oldest first, so a tenant that queued
10,000 jobs a minute ago fills every worker until they are all done, and a tenant that
queued 10 just after waits behind them. `claim_fair` takes the same expired leases first,
then orders pending jobs by the place each would take among its tenant's jobs in flight
(running + its rank in the tenant's queue): a tenant with nothing running goes first, and
`tenant_cap` stops any tenant from holding more than that many live leases, also when
several workers claim at the same instant.

    fairness.install(conn)                       # once: the two indexes it reads
    claims = fairness.claim_fair(conn, 4, lease=30, tenant_cap=2)

It chooses (`fair_choice` in `sql/fairness.sql`) and lets the claim statement of
`jobs` take what it chose, in one transaction, so it returns the same `jobs.Claim`s and
heartbeat, finish, fail and release are unchanged. The price is one index probe per tenant
with pending jobs (a skip scan over `jobs_fair`) and, with a cap, a lock per tenant that
concurrent fair claims of that tenant wait for; the indexes are in `sql/fairness_indexes.sql`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from .. import sqlfile
from ..checks import check_int, check_text
from .jobs import Claim, _claimed
from .limits import check_kinds, check_lease

__all__ = ["choose", "claim_fair", "install", "query"]

query = sqlfile.load(__package__, "fairness.sql")
"""The named statements of `sql/fairness.sql`: `query("name").sql` to read, print or EXPLAIN."""


def install(conn: psycopg.Connection) -> None:
    """Create the fair claim's two indexes unless they exist. Safe to call from many
    workers at once; a fresh chapter schema does not have them."""
    with conn.transaction():
        conn.execute(sqlfile.read(__package__, "fairness_indexes.sql"))


def choose(conn: psycopg.Connection, limit: int, *, kinds: Iterable[str] | None = None,
           tenant_cap: int | None = None) -> list[tuple[int, int]]:
    """The fair claim's first choice as this statement's snapshot sees it: (job id, tenant
    id) of up to `limit` jobs, expired leases first. Reads only: no lock, no claim. Under
    concurrency it can count too few running jobs (another claim not yet committed), which
    is why `claim_fair` with a cap chooses again under the tenants' locks. Needs install()."""
    params = {"limit": check_int(limit, "limit", minimum=1), "kinds": check_kinds(kinds),
              "tenant_cap": None if tenant_cap is None else check_int(tenant_cap, "tenant_cap",
                                                                      minimum=1),
              "tenants": None}
    return [(job_id, tenant) for job_id, tenant in conn.execute(query("fair_choice").sql, params)]


def claim_fair(conn: psycopg.Connection, limit: int, *, lease: float = 30.0,
               kinds: Iterable[str] | None = None, worker: str | None = None,
               tenant_cap: int | None = None) -> list[Claim]:
    """Claim up to `limit` jobs in one transaction, expired leases first, then fairly.

    Fair: among due pending jobs, those whose tenant has the fewest jobs running (counting
    the ones this claim takes) come first; ties go to the oldest run_after. With
    `tenant_cap`, no tenant ends up holding more than that many live leases, however many
    fair claims run at once: the choice is made again under a lock per tenant (taken in
    tenant order), from a snapshot that sees every claim the lock's previous holder
    committed. Everything else (lease, attempt row, kinds, synchronous_commit) is as in
    `jobs.claim_many`, whose statement takes the chosen jobs. Needs install().
    """
    params: dict[str, Any] = {
        "limit": check_int(limit, "limit", minimum=1), "lease": check_lease(lease),
        "kinds": check_kinds(kinds), "worker": check_text(worker, "worker", optional=True),
        "tenant_cap": None if tenant_cap is None else check_int(tenant_cap, "tenant_cap",
                                                                minimum=1),
        "tenants": None}
    own = conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE
    with conn.transaction():  # the chosen rows and the tenants' locks are held until it ends
        chosen = conn.execute(query("fair_choice").sql, params).fetchall()
        if tenant_cap is not None and chosen:
            tenants = sorted({tenant for _, tenant in chosen})
            conn.execute(query("lock_tenants").sql, {"tenants": tenants})
            chosen = conn.execute(query("fair_choice").sql, params | {"tenants": tenants}).fetchall()
        return _claimed(conn, params | {"chosen": [job_id for job_id, _ in chosen]},
                        durable=not own)
