"""Recording what a worker process does: the queue's calls wrapped, as a Jepsen client would.

`install(recorder)` wraps, in the CURRENT process, the functions the real `queue.Worker`
calls (`jobs.claim_many`, `jobs.finish`, `jobs.finish_many`, `jobs.fail`, `jobs.release`,
`registry.beat`): each call is recorded as an `invoke`, then `ok` with what it answered, or
`unknown` when the connection broke before the answer (and the error is raised on, for
the worker to handle as it would); the throughput mode's `prefetch.release_many` is
recorded as one `release` per job of its statement. A renewal is bracketed by two readings of the database
clock (`db_before`, `db_after`), the only way to place it on that clock. `RecordingPolicy`
records the retry delay `jobs.fail` draws. `verdicts(recorder)` turns the worker's own log
lines (finished, rejected, retrying, ...) into `verdict` operations: what the library
concluded, to compare with what the tables say.
Install after `variants.install`, so the mutant is what gets recorded.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from ..queue import fairness, jobs, prefetch, registry
from ..queue.logline import LOGGER
from ..queue.notify import CONNECTION_ERRORS
from ..queue.retry import RetryPolicy
from .history import Recorder, db_now

__all__ = ["RecordingPolicy", "install", "verdicts"]

_drawn = threading.local()
# (job, attempt) -> lease token, for verdicts (a log line names job and attempt only). The
# token of the latest report wins over the latest claim's: a claim lost in a crash is
# claimed again under the same attempt number and a new token, and the old holder's
# report (and verdict) may come after that.
_tokens: dict[tuple[int, int], str] = {}
_reported: dict[tuple[int, int], str] = {}


@dataclass(frozen=True)
class RecordingPolicy(RetryPolicy):
    """A RetryPolicy that remembers the last delay it drew (per thread) for the recorder."""

    def delay(self, attempt: int, rng: Any = None) -> float:
        value = super().delay(attempt, rng)
        _drawn.value = value
        return value


def _claim_fields(claim: jobs.Claim) -> dict[str, Any]:
    return {"job": claim.job_id, "attempt": claim.attempt, "token": str(claim.lease_token)}


def _reporting(claim: jobs.Claim) -> None:
    _reported[claim.job_id, claim.attempt] = str(claim.lease_token)


def install(rec: Recorder) -> None:
    """Wrap the queue's functions in this process so that every call is recorded."""
    finish, finish_many = jobs.finish, jobs.finish_many
    fail, release, beat = jobs.fail, jobs.release, registry.beat
    release_many = prefetch.release_many

    def recording(claim_many):
        """A claim function (`jobs.claim_many`, `fairness.claim_fair`) that records its claims."""
        def recorded_claim_many(conn, limit, *, lease=30.0, **kw):
            call = rec.call()
            rec.op("invoke", "claim", call=call, limit=limit)
            try:
                claims = claim_many(conn, limit, lease=lease, **kw)
            except CONNECTION_ERRORS as exc:
                rec.op("unknown", "claim", call=call, error=type(exc).__name__)
                raise
            for c in claims:
                until = c.locked_until.timestamp()
                _tokens[c.job_id, c.attempt] = str(c.lease_token)
                rec.op("ok", "claim", call=call, **_claim_fields(c), lease=lease,
                       **{"from": until - lease, "until": until})
            if not claims:
                rec.op("ok", "claim", call=call, job=None)
            return claims
        return recorded_claim_many

    def reporting(f: str, pairs: list[jobs.Claim], run, outcome, extra=None):
        call = rec.call()
        for c in pairs:
            _reporting(c)
            rec.op("invoke", f, call=call, **_claim_fields(c), **(extra or {}))
        try:
            answer = run()
        except CONNECTION_ERRORS as exc:
            for c in pairs:
                rec.op("unknown", f, call=call, **_claim_fields(c), error=type(exc).__name__)
            raise
        for c, said in zip(pairs, outcome(answer), strict=True):
            rec.op("ok", f, call=call, **_claim_fields(c),
                   outcome="accepted" if said else "rejected",
                   **({"state": said} if isinstance(said, str) else {}))
        return answer

    def recorded_finish(conn, claim, output):
        return reporting("finish", [claim], lambda: finish(conn, claim, output), lambda a: [a])

    def recorded_finish_many(conn, results):
        pairs = list(results)
        return reporting("finish", [c for c, _ in pairs], lambda: finish_many(conn, pairs),
                         lambda a: a, {"batch": len(pairs)})

    def recorded_fail(conn, claim, error, **kw):
        _drawn.value = None  # jobs.fail draws the delay; RecordingPolicy keeps it for us
        policy = kw.get("policy")
        box: dict[str, Any] = {}

        def run():
            state = fail(conn, claim, error, **kw)
            box["delay"] = getattr(_drawn, "value", None)
            return state

        call = rec.call()
        _reporting(claim)
        rec.op("invoke", "fail", call=call, **_claim_fields(claim),
               permanent=kw.get("permanent", False),
               policy=None if policy is None else policy.mode)
        try:
            state = run()
        except CONNECTION_ERRORS as exc:
            rec.op("unknown", "fail", call=call, **_claim_fields(claim), error=type(exc).__name__,
                   delay=getattr(_drawn, "value", None))
            raise
        rec.op("ok", "fail", call=call, **_claim_fields(claim),
               outcome="accepted" if state else "rejected", state=state, delay=box["delay"])
        return state

    def recorded_release(conn, claim, reason):
        return reporting("release", [claim], lambda: release(conn, claim, reason), lambda a: [a])

    def recorded_release_many(conn, claims, reason):
        claims = list(claims)
        return reporting("release", claims, lambda: release_many(conn, claims, reason),
                         lambda a: [a.get(c.lease_token) for c in claims], {"batch": len(claims)})

    def recorded_beat(conn, name, claims, lease):
        claims = list(claims)
        tokens = [str(c.lease_token) for c in claims]
        call = rec.call()
        before = db_now(conn)
        rec.op("invoke", "renew", call=call, tokens=tokens, db_before=before)
        try:
            held = beat(conn, name, claims, lease)
            after = db_now(conn)
        except CONNECTION_ERRORS as exc:
            rec.op("unknown", "renew", call=call, tokens=tokens, db_before=before,
                   error=type(exc).__name__)
            raise
        rec.op("ok", "renew", call=call, tokens=tokens, held=[str(t) for t in held],
               db_before=before, db_after=after)
        return held

    jobs.claim_many = recording(jobs.claim_many)
    fairness.claim_fair = recording(fairness.claim_fair)  # what Worker(fair=True) calls
    jobs.finish, jobs.finish_many = recorded_finish, recorded_finish_many
    jobs.fail, jobs.release = recorded_fail, recorded_release
    prefetch.release_many = recorded_release_many  # what Worker(prefetch=N) calls on stop
    registry.beat = recorded_beat


_REPORT_VERDICTS = ("finished", "rejected", "retrying", "failed")  # after a report


class _Verdicts(logging.Handler):
    EVENTS = ("finished", "rejected", "retrying", "failed", "lost", "handed-back", "abandoned")

    def __init__(self, rec: Recorder) -> None:
        super().__init__()
        self.rec = rec

    def emit(self, record: logging.LogRecord) -> None:
        words = record.getMessage().split()
        if len(words) < 2 or words[1] not in self.EVENTS:
            return
        fields = dict(w.split("=", 1) for w in words[2:] if "=" in w)
        try:
            job, attempt = int(fields["job"]), int(fields["attempt"])
        except (KeyError, ValueError):
            return
        key = (job, attempt)
        token = _reported.get(key) if words[1] in _REPORT_VERDICTS else None
        self.rec.op("info", "verdict", event=words[1], job=job, attempt=attempt,
                    token=token or _tokens.get(key))


def verdicts(rec: Recorder) -> None:
    """Record the worker's own verdict on each job it held (its log lines) as operations."""
    LOGGER.addHandler(_Verdicts(rec))
    LOGGER.setLevel(logging.INFO)
