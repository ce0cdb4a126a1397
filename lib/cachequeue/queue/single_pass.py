"""The worker's testable single pass: claim one job, run its handler outside any transaction, record the outcome.

`run_once` is the three steps in a row: `jobs.claim`, `execute` (the handler, with no
transaction open) and `record` (finish or fail, in one short statement). The long-running
`worker.Worker` uses the same `execute` and `record`, with the steps spread over threads.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from ..checks import check_autocommit_idle, check_callable, check_instance, check_int
from ..errors import InvalidJob
from . import jobs
from .limits import check_kinds
from .retry import PermanentError, RetryPolicy

__all__ = ["OUTCOMES", "Result", "check_handlers", "drain", "execute", "record", "run_once"]

# What run_once reports: the job's new state, or 'lost' when the lease was no longer ours
# (expired and reclaimed, or cancelled) by the time the handler returned.
OUTCOMES = ("done", "pending", "failed", "lost")

Handler = Callable[..., Any]


@dataclass(frozen=True)
class Result:
    """What a handler did: returned `output`, or raised `error` (`permanent` for a PermanentError)."""

    output: Any = None
    error: BaseException | None = None
    permanent: bool = False


def execute(handler: Handler, *args: Any) -> Result:
    """Call `handler(*args)` (the payload, and a context for handlers that take one) and
    capture what happened. An Exception becomes a failed Result; BaseExceptions such as
    KeyboardInterrupt propagate."""
    try:
        return Result(output=handler(*args))
    except PermanentError as exc:
        return Result(error=exc, permanent=True)
    except Exception as exc:
        return Result(error=exc)


def record(conn: psycopg.Connection, claim: jobs.Claim, result: Result, *,
           policy: RetryPolicy | None = None, rng: random.Random | None = None) -> str:
    """Finish or fail the claimed job with `result`; return one of OUTCOMES but None.

    An output that cannot be stored (not JSON, too large) fails the job permanently:
    running the same code again would produce it again. 'lost' when the lease was no
    longer this claim's (the database refused the report and noted it on the attempt row).
    """
    if result.error is not None:
        return jobs.fail(conn, claim, result.error, permanent=result.permanent, policy=policy,
                         rng=rng) or "lost"
    try:
        finished = jobs.finish(conn, claim, result.output)
    except InvalidJob as exc:
        return jobs.fail(conn, claim, exc, permanent=True, policy=policy, rng=rng) or "lost"
    return "done" if finished else "lost"


def check_handlers(handlers: Mapping[str, Handler], kinds: Iterable[str] | None) -> list[str]:
    """The kinds to claim: `kinds`, or every kind in `handlers`; each must have a handler.

    TypeError for a handlers object that is not a mapping of callables; ValueError for an
    empty mapping or a kind without a handler (a claimed job of that kind would be stuck).
    """
    check_instance(handlers, "handlers (a mapping {kind: callable(payload)})", Mapping)
    if not handlers:
        raise ValueError("handlers must not be empty: give one {kind: callable(payload)}")
    for kind, handler in handlers.items():
        check_callable(handler, f"the handler for {kind!r}")
    names = list(handlers) if kinds is None else check_kinds(kinds)
    missing = sorted(set(names) - set(handlers))
    if missing:
        raise ValueError(f"no handler for the kinds {missing}; a claimed job would be stuck")
    return names


def _check(conn: psycopg.Connection, handlers: Mapping[str, Handler],
           kinds: Iterable[str] | None) -> list[str]:
    names = check_handlers(handlers, kinds)
    # The claim must commit before the handler starts, and no transaction may stay open
    # while it runs: an autocommit connection that is idle guarantees both.
    check_autocommit_idle(conn, "run_once")
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
    result = execute(handlers[claim.kind], claim.payload)
    return record(conn, claim, result, policy=policy, rng=rng)


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
