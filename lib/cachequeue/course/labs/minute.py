"""A minute of work whose every figure is known before it runs, and a tenant that bursts.

Chapter 08 asserts the queue's figures to the last digit: `Minute` says what happens in
the minute (durations of the successes, retries, failures, a job left waiting),
`warm_up(conn, clock)` empties the queue and gives every series of the minute a history
(so the first scrape already has them: Prometheus needs two samples of a series for an
increase), and `run_minute(conn, clock, minute)` plays it on the database clock
(`db.set_clock`) and leaves the clock at its end, where the figures are read. `burst`
makes one tenant the busiest for a while, to watch the top-N tenant labels change
between scrapes. Nothing sleeps: every duration is a step of the manual clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ... import db
from ...checks import check_int
from ...clock import ManualClock
from ...queue import jobs
from ...queue.jobs import Claim
from ...queue.retry import RetryPolicy
from .opsday import clear

__all__ = ["Minute", "burst", "run_minute", "warm_up"]


@dataclass(frozen=True)
class Minute:
    """A minute of work whose every figure is known before it runs.

    Tenant 1 (kind noop): one success for each duration in `successes` (seconds),
    `retries` attempts that fail and are retried ten minutes later (so they are not due
    within the minute), `failures` attempts that fail for good. Tenant 2 (kind summarise):
    `other_successes` successes of `other_seconds` each, and `waiting` jobs that nobody
    claims. Every job is submitted at the minute's start and claimed one second later;
    failing attempts end one second after that; the minute lasts `seconds`.
    """

    successes: tuple[float, ...] = tuple(float(s) for s in range(1, 22))
    retries: int = 6
    failures: int = 3
    other_successes: int = 9
    other_seconds: float = 3.0
    waiting: int = 1
    seconds: int = 60

    def __post_init__(self) -> None:
        for count in ("retries", "failures", "other_successes", "waiting"):
            check_int(getattr(self, count), count, minimum=0)
        check_int(self.seconds, "seconds", minimum=3)
        longest = max((*self.successes, self.other_seconds, 1.0))
        if 1 + longest > self.seconds:
            raise ValueError(f"an attempt of {longest:g} s does not end within the minute")

    @property
    def claims(self) -> int:
        """Attempts the minute starts (every job but the waiting ones)."""
        return len(self.successes) + self.retries + self.failures + self.other_successes


_LATER = RetryPolicy(base=600.0, cap=600.0, jitter=False)  # a retry ten minutes later
_WARM_UP = 10  # seconds of history before the minute


def warm_up(conn: psycopg.Connection, clock: ManualClock) -> None:
    """Empty the queue, then give every series of the Minute a history: from `clock.now`
    on, tenant 1 has one noop success, one retry and one failure, tenant 2 one summarise
    success, each attempt 0.5 s long. Leaves the database clock at clock.now + 10 s."""
    clear(conn)
    db.set_clock(conn, clock.datetime())
    for tenant, kind, role in ((1, "noop", "done"), (1, "noop", "retry"), (1, "noop", "fail"),
                               (2, "summarise", "done")):
        jobs.submit(conn, tenant_id=tenant, kind=kind, payload={"role": role})
    claims = jobs.claim_many(conn, 4)
    clock.advance(0.5)
    db.set_clock(conn, clock.datetime())
    for claim in claims:
        _end(conn, claim)
    clock.advance(_WARM_UP - 0.5)
    db.set_clock(conn, clock.datetime())


def _end(conn: psycopg.Connection, claim: Claim) -> None:
    role = claim.payload["role"]
    if role == "done":
        jobs.finish(conn, claim, {})
    else:
        jobs.fail(conn, claim, "TimeoutError: vendor did not answer",
                  permanent=role == "fail", policy=_LATER)


def run_minute(conn: psycopg.Connection, clock: ManualClock, minute: Minute = Minute()) -> None:
    """Play `minute` from `clock.now` on the database clock (see Minute); leaves the clock
    and the database clock at its end, for the figures to be read there."""
    start = clock.now
    db.set_clock(conn, clock.datetime())
    plan = ([(1, "noop", {"role": "done", "seconds": s}) for s in minute.successes]
            + [(1, "noop", {"role": "retry", "seconds": 1.0})] * minute.retries
            + [(1, "noop", {"role": "fail", "seconds": 1.0})] * minute.failures
            + [(2, "summarise", {"role": "done", "seconds": minute.other_seconds})]
            * minute.other_successes
            + [(2, "summarise", {"role": "waiting"})] * minute.waiting)
    for tenant, kind, payload in plan:
        jobs.submit(conn, tenant_id=tenant, kind=kind, payload=payload)
    clock.advance(1)
    db.set_clock(conn, clock.datetime())
    claims = jobs.claim_many(conn, minute.claims)
    if len(claims) != minute.claims or any(c.payload["role"] == "waiting" for c in claims):
        raise RuntimeError("the queue held other due jobs: call warm_up() first")
    for end in sorted({c.payload["seconds"] for c in claims}):
        clock.advance(start + 1 + end - clock.now)
        db.set_clock(conn, clock.datetime())
        for claim in claims:
            if claim.payload["seconds"] == end:
                _end(conn, claim)
    clock.advance(start + minute.seconds - clock.now)
    db.set_clock(conn, clock.datetime())


def burst(conn: psycopg.Connection, tenant_id: int, count: int = 10) -> list[Claim]:
    """`tenant_id` submits `count` noop jobs and they are claimed at once (they run, and
    make it the busiest tenant); the claims, to finish them later. Call it when no other
    job is due: the claim takes the oldest due jobs."""
    check_int(count, "count", minimum=1)
    for n in range(count):
        jobs.submit(conn, tenant_id=check_int(tenant_id, "tenant_id"), kind="noop",
                    payload={"burst": n})
    claims = jobs.claim_many(conn, count)
    if len(claims) != count or {c.tenant_id for c in claims} != {tenant_id}:
        raise RuntimeError("other jobs were due: the burst claimed them too")
    return claims
