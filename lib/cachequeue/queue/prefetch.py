"""The worker's throughput mode: jobs claimed ahead into a local queue, handed back unstarted on stop.

`Worker(prefetch=N)` (`cachequeue worker --prefetch N`) claims up to `concurrency + N` jobs
and keeps them in a local queue that its handler threads take from directly: no turn of
the loop per started job. The loop refills the queue with one claim statement once it is
down to half (`refill_at`), before it runs dry, and the completion batch (`--batch`,
fenced row by row by `jobs.finish_many`) writes the results, sent on a connection of its
own by a sender thread (`inflight._Sender`) while the loop claims. This is graphile-worker's
local queue and batched completion, with two differences that the course insists on:

- a job waiting in the local queue holds a lease that stays true: it is in the worker's
  held set, so every heartbeat renews it with the running ones (one statement for all);
  a job whose lease was lost or ran out while it waited (a paused worker, a cancel) is not
  started: it is handed back (`jobs.release`, refused if another attempt holds it), not
  failed, so it uses up no attempt;
- a stopping worker hands the jobs still waiting locally back at once, in one statement
  (`release_many`: each row fenced by its own lease token, as `jobs.release` is), not at
  lease expiry; only the running ones get the shutdown timeout.

Every hand-back of a job that waited here counts toward the hand-back cap
(`limits.MAX_HANDBACKS`) exactly as `jobs.release` counts it: the one that reaches the cap
fails the job, saying why. A job that keeps being fetched ahead by workers that stop before
they start it is not handed round for ever (tests/integration/queue/test_worker_prefetch.py).

What it costs: a job waits behind up to N others of this worker (latency, and fairness
between workers: a worker holds what another idle one could run), and a crash leaves up
to concurrency + N jobs to lease expiry instead of concurrency.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import psycopg

from .. import sqlfile
from ..checks import check_instance, check_int, check_text
from ..errors import ForeignClaim
from .jobs import BATCH_PLAN, Claim
from .limits import MAX_HANDBACKS

__all__ = ["MAX_PREFETCH", "PREFETCH", "query", "refill_at", "release_many"]

PREFETCH = 500  # the jobs one claim fetches ahead in the throughput mode (graphile's local queue: 500)
MAX_PREFETCH = 5000  # at most: every held lease is renewed by one statement

query = sqlfile.load(__package__, "prefetch.sql")


def check_prefetch(prefetch: int) -> int:
    """0 (off) or 1..MAX_PREFETCH; TypeError/ValueError otherwise."""
    return check_int(prefetch, "prefetch", minimum=0, maximum=MAX_PREFETCH)


def refill_at(concurrency: int, prefetch: int) -> int:
    """Claim again once the jobs not yet done (running and waiting locally) are at most this:
    the running ones and half the local queue, so the queue never runs dry while one claim
    is on its way."""
    return concurrency + prefetch // 2


def release_many(conn: psycopg.Connection, claims: Iterable[Claim],
                 reason: str) -> dict[uuid.UUID, str]:
    """jobs.release for several held jobs in ONE statement: {lease token: new state} of the
    ones handed back ('pending', or 'failed' at the hand-back cap); a token missing from the
    answer had already lost its lease (nothing written for it). Distinct jobs of one schema."""
    claims = [check_instance(c, "each claim", Claim) for c in claims]
    if not claims:
        return {}
    schemas = {c.schema for c in claims}
    if len(schemas) > 1:
        raise ForeignClaim(f"claims from several schemas {sorted(schemas)}; nothing was changed")
    job_ids = [check_int(c.job_id, "claim.job_id") for c in claims]
    if len(set(job_ids)) != len(job_ids):
        raise ValueError("each job may appear once in release_many()")
    for c in claims:
        check_instance(c.lease_token, "claim.lease_token", uuid.UUID)
    schema = claims[0].schema
    tokens, states, found = conn.execute(query("release_many").sql, {
        "job_ids": job_ids, "lease_tokens": [c.lease_token for c in claims],
        "reason": check_text(reason, "reason", limit=1000), "max_handbacks": MAX_HANDBACKS,
        "schema": schema}, prepare=BATCH_PLAN).fetchone()
    if found != schema:
        raise ForeignClaim(f"these claims were made in schema {schema!r} but the connection "
                           f"uses {found!r}; nothing was changed")
    return dict(zip(tokens, states, strict=True))
