"""The worker's testable single pass: claim one job, run its handler outside any transaction, record the outcome."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from ..checks import check_callable, check_instance, check_int
from ..errors import InvalidJob
from . import jobs
from .limits import check_kinds
from .retry import PermanentError, RetryPolicy

__all__ = ["OUTCOMES", "drain", "run_once"]

# What run_once reports: the job's new state, or 'lost' when the lease was no longer ours
# (expired and reclaimed, or cancelled) by the time the handler returned.
OUTCOMES = ("done", "pending", "failed", "lost")

Handler = Callable[[dict], Any]


def _check(conn: psycopg.Connection, handlers: Mapping[str, Handler],
           kinds: Iterable[str] | None) -> list[str]:
    check_instance(handlers, "handlers (a mapping {kind: callable(payload)})", Mapping)
    if not handlers:
        raise ValueError("handlers must not be empty: give one {kind: callable(payload)}")
    for kind, handler in handlers.items():
        check_callable(handler, f"the handler for {kind!r}")
    names = list(handlers) if kinds is None else check_kinds(kinds)
    missing = sorted(set(names) - set(handlers))
    if missing:
        raise ValueError(f"no handler for the kinds {missing}; a claimed job would be stuck")
    # The claim must commit before the handler starts, and no transaction may stay open
    # while it runs: an autocommit connection that is idle guarantees both.
    if not conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        raise ValueError("run_once needs an autocommit connection outside any transaction "
                         "(db.connect(schema)); do not call it inside conn.transaction()")
    return names


def run_once(conn: psycopg.Connection, handlers: Mapping[str, Handler], *, lease: float = 30.0,
             policy: RetryPolicy | None = None, worker: str | None = None,
             kinds: Iterable[str] | None = None, rng: random.Random | None = None) -> str | None:
    """Claim one job of a kind in `handlers` (or in `kinds`), run `handlers[kind](payload)`,
    then finish or fail it. Returns one of OUTCOMES, or None when nothing was claimable.

    The handler runs with no transaction open; the lease alone protects the job meanwhile.
    A `PermanentError` fails the job at once; any other Exception is retryable (backoff
    from `policy`). An output that cannot be stored (not JSON, too large) fails the job
    permanently: running the same code again would produce it again. BaseExceptions such as
    KeyboardInterrupt propagate; the lease then expires and another worker reclaims the job.
    """
    names = _check(conn, handlers, kinds)
    claim = jobs.claim(conn, lease=lease, kinds=names, worker=worker)
    if claim is None:
        return None
    try:
        output = handlers[claim.kind](claim.payload)
    except PermanentError as exc:
        return jobs.fail(conn, claim, exc, permanent=True, policy=policy, rng=rng) or "lost"
    except Exception as exc:
        return jobs.fail(conn, claim, exc, policy=policy, rng=rng) or "lost"
    try:
        finished = jobs.finish(conn, claim, output)
    except InvalidJob as exc:
        return jobs.fail(conn, claim, exc, permanent=True, policy=policy, rng=rng) or "lost"
    return "done" if finished else "lost"


def drain(conn: psycopg.Connection, handlers: Mapping[str, Handler], *,
          max_iterations: int = 1000, **kw: Any) -> Counter:
    """Repeat run_once until nothing is claimable, at most `max_iterations` times.

    Returns a Counter of outcomes; its total equals max_iterations when the bound stopped
    it (more work may remain). Jobs waiting for a later run_after are not waited for.
    """
    check_int(max_iterations, "max_iterations", minimum=1)
    outcomes: Counter = Counter()
    for _ in range(max_iterations):
        outcome = run_once(conn, handlers, **kw)
        if outcome is None:
            break
        outcomes[outcome] += 1
    return outcomes
