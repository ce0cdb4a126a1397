"""The named variants a verify run can select: the real queue, and mutants of it.

Each mutant takes ONE safeguard out of the queue (its SQL is in `sql/variants.sql`, next
to what it removes), so that a run can show the checker catches what that safeguard
prevents:

- `no-token-check`: finish by job id and state only (no lease token, no expiry);
- `read-then-claim`: SELECT the runnable jobs, then UPDATE them, with no FOR UPDATE SKIP
  LOCKED and no re-check: two workers can take the same job;
- `reset-on-shutdown`: a worker told to stop (SIGTERM) sets every running job back to
  pending, everyone else's included;
- `unfenced-batch`: the batched completion checks only the job id, as River's and
  pgqueuer's batches do;
- `heartbeat-after-expiry`: the heartbeat renews a lease that already ran out.

`install(variant)` swaps the mutant's functions into `queue.jobs` / `queue.registry` of the
CURRENT process, where the real `queue.Worker` calls them: only ever in a verify run's own
worker processes (`verify.workerproc`), never in a process that serves anything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg

from .. import sqlfile
from ..checks import check_choice
from ..queue import jobs, registry
from ..queue.limits import check_kinds, check_lease, to_json

__all__ = ["MUTANTS", "REAL", "VARIANTS", "claim_read", "install", "on_shutdown",
           "read_candidates"]

REAL = "real"
MUTANTS = ("no-token-check", "read-then-claim", "reset-on-shutdown", "unfenced-batch",
           "heartbeat-after-expiry")
VARIANTS = (REAL, *MUTANTS)

_QUERIES = sqlfile.load(__package__, "variants.sql")


def _finish_many_by(name: str):
    def finish_many(conn: psycopg.Connection, results: Iterable[tuple[jobs.Claim, Any]]) -> list[bool]:
        pairs = list(results)
        if not pairs:
            return []
        ids = [claim.job_id for claim, _ in pairs]
        row = conn.execute(_QUERIES[name].sql, {
            "job_ids": ids, "lease_tokens": [claim.lease_token for claim, _ in pairs],
            "outputs": [to_json(output, "output") for _, output in pairs]}).fetchone()
        done = set(row[0])
        return [job_id in done for job_id in ids]
    return finish_many


def _finish_by(finish_many):
    def finish(conn: psycopg.Connection, claim: jobs.Claim, output: Any) -> bool:
        return finish_many(conn, [(claim, output)])[0]
    return finish


def read_candidates(conn: psycopg.Connection, limit: int,
                    kinds: Iterable[str] | None = None) -> list[tuple]:
    """read-then-claim, step 1: the runnable jobs (id, old token, old lease end), unlocked
    (after failing the expired leases with no attempt left, as the real claim does)."""
    conn.execute(_QUERIES["give_up_exhausted"].sql)
    params = {"limit": limit, "kinds": check_kinds(kinds)}
    return conn.execute(_QUERIES["read_candidates"].sql, params).fetchall()


def claim_read(conn: psycopg.Connection, read: list[tuple], *, lease: float,
               worker: str | None = None) -> list[jobs.Claim]:
    """read-then-claim, step 2: take the jobs step 1 read, without checking them again."""
    if not read:
        return []
    rows = conn.execute(_QUERIES["claim_read"].sql, {
        "ids": [r[0] for r in read], "old_tokens": [r[1] for r in read if r[1] is not None],
        "old_untils": [r[2] for r in read if r[1] is not None], "lease": check_lease(lease),
        "worker": worker}).fetchall()
    return [jobs.Claim(*row) for row in rows]


def _claim_many_read_then_claim(conn: psycopg.Connection, limit: int, *, lease: float = 30.0,
                                kinds: Iterable[str] | None = None,
                                worker: str | None = None) -> list[jobs.Claim]:
    return claim_read(conn, read_candidates(conn, limit, kinds), lease=lease, worker=worker)


def _beat_after_expiry(conn: psycopg.Connection, name: str, claims: Iterable[jobs.Claim],
                       lease: float) -> set:
    claims = list(claims)
    row = conn.execute(_QUERIES["beat_after_expiry"].sql, {
        "name": name, "lease": check_lease(lease), "job_ids": [c.job_id for c in claims],
        "lease_tokens": [c.lease_token for c in claims],
        "schema": claims[0].schema if claims else None}).fetchone()
    return set(row[0])


def install(variant: str) -> None:
    """Put `variant`'s functions in place in this process (nothing for the real queue)."""
    check_choice(variant, "variant", VARIANTS)
    if variant == "no-token-check":
        jobs.finish_many = _finish_many_by("finish_many_no_token")
        jobs.finish = _finish_by(jobs.finish_many)
    elif variant == "unfenced-batch":
        jobs.finish_many = _finish_many_by("finish_many_unfenced")
    elif variant == "read-then-claim":
        jobs.claim_many = _claim_many_read_then_claim
    elif variant == "heartbeat-after-expiry":
        registry.beat = _beat_after_expiry


def on_shutdown(variant: str, conn: psycopg.Connection) -> int:
    """What a stopping worker of `variant` does before it stops; the rows it changed."""
    if variant != "reset-on-shutdown":
        return 0
    return conn.execute(_QUERIES["reset_running"].sql).rowcount
