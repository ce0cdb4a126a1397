"""Replay one sequence of queue operations on QueueModel and on PostgreSQL, and compare.

A sequence is a list of `Step`s: submit, claim, advance the clock, finish / fail /
heartbeat with the n-th claim handed out so far (an old one or the current one), cancel,
retry. `replay` runs it on a fresh `QueueModel` and, through `cachequeue.queue.jobs`, on the
queue tables of one schema, with one `ManualClock` driving both: before every database
call the session's clock is set to `clock.datetime()`. It records both return values of
every step (so a disagreement shows the first step where the algorithm and the SQL part
ways) and, at the end, both views of every job: its status and its attempt rows, with
times as seconds on the shared clock. `steps()` is a hypothesis strategy that generates
such sequences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from ... import db, sqlfile
from ...clock import ManualClock
from ...queue import jobs
from ...queue.retry import RetryPolicy
from .queue_model import QueueModel

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["POLICY", "Step", "Trace", "replay", "steps", "tally"]

# No jitter, so both sides compute the same backoff; generous caps so the job's own
# max_attempts decides, as the chapter's exercise intends.
POLICY = RetryPolicy(max_attempts=10, base=2.0, cap=8.0, jitter=False)
OPS = ("submit", "claim", "advance", "finish", "fail", "heartbeat", "cancel", "retry")


@dataclass(frozen=True)
class Step:
    """One operation. `args` by op: submit (tenant, kind, max_attempts, key), claim (lease,),
    advance (seconds,), finish / fail / heartbeat (claim number, ...) with fail taking
    (n, permanent), cancel / retry (tenant, job number)."""

    op: str
    args: tuple = ()

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r}; expected one of {OPS}")

    def __str__(self) -> str:
        return f"{self.op}({', '.join(map(repr, self.args))})"


@dataclass
class Trace:
    """Per step: the op and both return values; at the end, both views of every job.
    `sequence` is the input as given (steps that had nothing to act on have no row)."""

    sequence: list[Step] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    model_jobs: dict[int, Any] = field(default_factory=dict)
    postgres_jobs: dict[int, Any] = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        return all(r["same"] for r in self.rows) and self.model_jobs == self.postgres_jobs

    def first_difference(self) -> dict[str, Any] | None:
        return next((r for r in self.rows if not r["same"]), None)

    def frame(self):
        """The steps as a pandas DataFrame: step, model, postgres, same."""
        import pandas as pd

        return pd.DataFrame([{k: r[k] for k in ("step", "model", "postgres", "same")}
                             for r in self.rows])


def _seconds(value: Any, epoch: datetime) -> float | None:
    """A database timestamp, or a model reading, as seconds since the clock's epoch."""
    if value is None:
        return None
    if isinstance(value, datetime):
        value = (value - epoch).total_seconds()
    return round(value, 6)  # timestamptz keeps microseconds


def _claim_view(claim: Any, epoch: datetime) -> tuple | None:
    if claim is None:
        return None
    return (claim.job_id, claim.tenant_id, claim.kind, claim.payload, claim.attempt,
            _seconds(claim.locked_until, epoch), claim.worker)


def _job_view(status: Any, attempts: list[dict], epoch: datetime) -> tuple:
    times = ("run_after", "created_at", "finished_at")
    head = tuple(getattr(status, f) for f in ("state", "attempts", "max_attempts",
                                             "last_error", "output"))
    tries = tuple((a["attempt"], a["worker"], _seconds(a["started_at"], epoch),
                   _seconds(a["finished_at"], epoch), a["outcome"], a["error"])
                  for a in attempts)
    return head + tuple(_seconds(getattr(status, f), epoch) for f in times) + (tries,)


def _call(fn, *args, **kw) -> Any:
    try:
        return fn(*args, **kw)
    except (ValueError, TypeError) as exc:  # bad input must be refused alike on both sides
        return f"{type(exc).__name__}"


def replay(conn: psycopg.Connection, sequence: list[Step], *, policy: RetryPolicy = POLICY,
           model_class: type[QueueModel] = QueueModel) -> Trace:
    """Run `sequence` on a new model (a `QueueModel`, or a variant to test the comparison
    itself) and on `conn`'s schema, whose queue tables are emptied first; compare."""
    clock = ManualClock()
    model = model_class(clock)
    conn.execute(sqlfile.load(__package__, "lockstep.sql")["empty_queue"].sql)
    tenants: dict[int, int] = {}  # job id -> tenant, for status()
    claims: list[tuple[Any, Any]] = []  # (model claim, database claim), in order
    trace = Trace(sequence=list(sequence))

    def on_both(name: str, *args: Any, **kw: Any) -> tuple[Any, Any]:
        db.set_clock(conn, clock.datetime())
        return (_call(getattr(model, name), *args, **kw),
                _call(getattr(jobs, name), conn, *args, **kw))

    for number, step in enumerate(sequence):
        if step.op == "advance":
            clock.advance(step.args[0])
            left = right = clock()
        elif step.op == "submit":
            tenant, kind, max_attempts, key = step.args
            left, right = on_both("submit", tenant_id=tenant, kind=kind,
                                  payload={"step": number}, max_attempts=max_attempts,
                                  idempotency_key=key)
            if isinstance(left, int):
                tenants[left] = tenant
        elif step.op == "claim":
            left, right = on_both("claim", lease=step.args[0], worker=f"w{number}")
            if left is not None and not isinstance(left, str):
                claims.append((left, right))
            left, right = _claim_view(left, clock.epoch), _claim_view(right, clock.epoch)
        elif step.op in ("finish", "fail", "heartbeat"):
            if not claims:
                continue
            held_model, held_db = claims[step.args[0] % len(claims)]
            extra: dict[str, Any] = {}
            if step.op == "finish":
                args = ({"step": number},)
            elif step.op == "fail":
                args, extra = (f"error at step {number}",), {"permanent": step.args[1],
                                                              "policy": policy}
            else:
                args = (30.0,)
            db.set_clock(conn, clock.datetime())
            left = _call(getattr(model, step.op), held_model, *args, **extra)
            right = _call(getattr(jobs, step.op), conn, held_db, *args, **extra)
        else:  # cancel, retry
            if not tenants:
                continue
            tenant, pick = step.args
            job_id = sorted(tenants)[pick % len(tenants)]
            left, right = on_both(step.op, tenant_id=tenant, job_id=job_id, actor="lab",
                                  reason=f"step {number}")
        trace.rows.append({"step": str(step), "model": left, "postgres": right,
                           "same": left == right})
    db.set_clock(conn, clock.datetime())
    for job_id, tenant in sorted(tenants.items()):
        trace.model_jobs[job_id] = _job_view(model.status(tenant_id=tenant, job_id=job_id),
                                             model.history(job_id), clock.epoch)
        trace.postgres_jobs[job_id] = _job_view(jobs.status(conn, tenant_id=tenant,
                                                            job_id=job_id),
                                                jobs.history(conn, job_id), clock.epoch)
    db.set_clock(conn, None)
    return trace


def _outcome(op: str, value: Any) -> str:
    if op == "claim":
        return "None" if value is None else ("claim" if value[4] == 1 else "claim again")
    return {"submit": "job id", "advance": "-"}.get(op, str(value))


def tally(traces: list[Trace]) -> pd.DataFrame:
    """How often each operation returned what (the PostgreSQL side), over many traces:
    rows are ops, columns outcomes ("claim again" is a claim of a later attempt)."""
    import pandas as pd

    pairs = [(r["step"].split("(")[0], _outcome(r["step"].split("(")[0], r["postgres"]))
             for t in traces for r in t.rows]
    frame = pd.DataFrame(pairs, columns=["op", "outcome"])
    return pd.crosstab(frame["op"], frame["outcome"]).reindex(
        [op for op in OPS if op in set(frame["op"])])


def steps(max_size: int = 20):
    """A hypothesis strategy of operation sequences (hypothesis is a dev dependency)."""
    from hypothesis import strategies as st

    def make(op: str, *args: Any) -> Any:
        return st.tuples(*args).map(lambda a: Step(op, a))

    pick = st.integers(0, 7)
    tenant = st.sampled_from([1, 2])
    submit = make("submit", tenant, st.sampled_from(["noop", "always_fail"]),
                  st.integers(1, 3), st.sampled_from([None, None, "a", "b"]))
    claim = make("claim", st.sampled_from([5.0, 30.0]))
    one = st.one_of(
        submit, claim, claim,
        make("advance", st.sampled_from([1.0, 5.0, 10.0, 31.0])),
        make("finish", pick),
        make("fail", pick, st.booleans()),
        make("heartbeat", pick),
        make("cancel", tenant, pick),
        make("retry", tenant, pick),
    )
    # Start with a few jobs and a claim, so most sequences reach the interesting states.
    opening = st.tuples(st.lists(submit, min_size=1, max_size=3), claim)
    return st.tuples(opening, st.lists(one, max_size=max_size)).map(
        lambda t: [*t[0][0], t[0][1], *t[1]])
