"""The checks of a recorded history: each one job by job, each failure with a minimal witness.

    violations = checks.check(ops, snapshot, lease=1.0, poll=0.5, policy=RetryPolicy(...))

`ops` are the operations of `history.read`, `snapshot` the tables of `history.snapshot`.
Each check returns `Violation`s; a violation names its check (and the number it has in
issue 21's list), the job, one sentence, and the witness: the few operations (and table
rows, marked `"row": table`) that prove it, nothing else. The checks:

1. `lost` / `unexpected`: every submitted job ended done or failed, and every answered
   claim is in the attempt rows unless a server restart came after it (a claim commits
   without waiting for the disk); no job, claim or result appears that was never submitted.
2. `one-result`: exactly one accepted result per done job (none for others), written by
   the attempt that held an unexpired lease when it was written; `ambiguous-as-failure`:
   a worker never calls a report that did commit (its answer lost with the connection)
   refused; `false-success`: nor calls one done that did not store its result.
3. `stale-accepted`: every report (finish, fail, release) carrying an outdated lease token
   (a later attempt had started, or the lease had run out) was rejected.
4. `lease-overlap`: no two unexpired leases on one job overlapped, by the database clock,
   and no attempt was left open (its lease never ended) when the next one claimed the job;
   `renew-after-expiry`: no lease was renewed after it had run out.
5. `attempts`: attempt numbers rise by one, attempts minus hand-backs stay within the cap,
   hand-backs are the released attempts; `retry-delay`: each drawn delay lies within the
   policy's [floor, ceiling] and the next attempt did not start before it had passed.
6. `side-effect`: the handler's effect keyed by the job's business key took effect once per
   key, and for every done job.
7. `reclaim`: the jobs a killed worker held were claimed again (or given up) within
   lease + poll (+ `slack`, and + the time the server was down) after the kill, counted
   from when some worker had a free slot and no older expired lease waited before it
   (with `concurrency` given).
8. `tenant-cap` (with `tenant_cap` given: a run of fair claims with a per-tenant cap): at no
   instant did one tenant hold more than `tenant_cap` live leases, by the database clock (a
   lease is live from its attempt's start until its attempt closed or, at the earliest, its
   lease ran out; the snapshot's time if neither happened). What the fair claim promises beyond that (each tenant's share, the worst
   wait) depends on the workload's arrival and is not checked here.

9. `terminal-left`: no job left a terminal state (done, failed, cancelled) except by an
   audited retry (failed -> pending with a `retry` row in job_audit): a late finish that
   turns a failed or cancelled job into done, a claim that takes one. Read from the state
   changes a trigger of the run records (`driver`, snapshot `transitions`).
10. `worker-died`: no worker process died of an error (an exit the nemesis did not cause),
   with the last line of its log as the witness.
And with 4, `lease-length`: every claim's lease ends `lease` seconds after the claim, by the
database clock (within LEASE_TOLERANCE of a lease): a claim that reads the worker's clock,
or sets another length, is caught on its first claim.

A run cut short (its time limit passed, or no worker was left) ends with jobs unsettled:
`check(..., cut_short=cause)` then leaves pending and running jobs out of `lost`, and
`unsettled(snapshot, cause)` lists them as inconclusive. `opportunities(ops, snapshot)`
counts, per check, the situations in which it could have fired: a check with none could
not have caught anything in that run.

Times: leases and attempt rows carry the database clock; operations carry the wall clock
of the same host (the embedded server's `cq_now()` is its clock_timestamp()). `EPSILON`
absorbs the rounding of timestamps to microseconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..queue.retry import RetryPolicy

__all__ = ["CHECKS", "EPSILON", "LEASE_TOLERANCE", "TERMINAL", "Violation", "check",
           "opportunities", "unknowns", "unsettled"]

EPSILON = 1e-3
REPORTS = ("finish", "fail", "release")
OUTAGES = ("restart", "blackhole", "pause-all")

CHECKS = {"lost": 1, "unexpected": 1, "one-result": 2, "ambiguous-as-failure": 2,
          "false-success": 2,
          "stale-accepted": 3, "lease-overlap": 4, "renew-after-expiry": 4, "lease-length": 4,
          "attempts": 5, "retry-delay": 5, "side-effect": 6, "reclaim": 7, "tenant-cap": 8,
          "terminal-left": 9, "worker-died": 10}
TERMINAL = ("done", "failed", "cancelled")
# How far a claim's lease end may lie from its start + lease (by the database clock). The
# real claim reads the clock once, so its leases are exact; a statement that reads
# cq_now() twice (a learner's claim inside custom.sql's wrapper) differs by the time the
# statement ran between the two readings.
LEASE_TOLERANCE = 0.25


@dataclass
class Violation:
    check: str
    job: int | None
    message: str
    witness: list[dict[str, Any]] = field(default_factory=list)

    @property
    def number(self) -> int:
        return CHECKS[self.check]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"number": self.number}


def _row(table: str, row: dict) -> dict:
    return {"row": table} | row


class _Index:
    """The history and the snapshot, indexed by job and lease token."""

    def __init__(self, ops: list[dict], snap: dict, lease: float) -> None:
        self.ops = [op if "i" in op else {"i": i} | op for i, op in enumerate(ops)]
        self.snap = snap
        self.lease = lease
        self.jobs = {r["job_id"]: r for r in snap.get("jobs", [])}
        self.results = {r["job_id"]: r for r in snap.get("results", [])}
        self.attempts: dict[int, list[dict]] = defaultdict(list)
        self.attempt_of: dict[str, dict] = {}
        for r in snap.get("attempts", []):
            self.attempts[r["job_id"]].append(r)
            self.attempt_of[r["lease_token"]] = r
        for rows in self.attempts.values():
            rows.sort(key=lambda r: r["attempt"])
        self.submits: dict[int, dict] = {}
        self.claims: dict[str, dict] = {}  # token -> claim ok
        self.by_job: dict[int, list[dict]] = defaultdict(list)
        self.invokes: dict[tuple[str, int | None], dict] = {}
        self.reports: list[tuple[dict, dict]] = []  # (invoke, completion)
        self.renews: list[tuple[dict, dict]] = []
        self.renews_of: dict[str, list[dict]] = defaultdict(list)  # token -> ok/unknown ops
        self.effects: list[dict] = []
        self.verdicts: list[dict] = []
        self.nemesis: list[dict] = []
        for op in self.ops:
            f, kind = op["f"], op["type"]
            if op.get("job") is not None:
                self.by_job[op["job"]].append(op)
            if f == "submit" and kind == "ok":
                self.submits[op["job"]] = op
            elif f == "claim" and kind == "ok" and op.get("token"):
                self.claims[op["token"]] = op
            elif f in REPORTS or f == "renew":
                key = (op["call"], op.get("job"))
                if kind == "invoke":
                    self.invokes[key] = op
                elif kind in ("ok", "fail", "unknown") and key in self.invokes:
                    pair = (self.invokes[key], op)
                    (self.renews if f == "renew" else self.reports).append(pair)
                    if f == "renew":
                        for token in op.get("tokens", self.invokes[key].get("tokens", [])):
                            self.renews_of[token].append(op)
            elif f == "effect":
                self.effects.append(op)
            elif f == "verdict":
                self.verdicts.append(op)
            elif kind == "info" and f not in ("run",):
                self.nemesis.append(op)

    def accepted_reports(self) -> list[tuple[dict, dict]]:
        """The reports that took effect. An `unknown` one counts when the tables show its
        effect, and then only the first unknown of that attempt and operation, and only if
        no answered report of it was accepted: one commit explains them all."""
        answered = {(i["token"], i["f"]) for i, d in self.reports
                    if d["type"] == "ok" and d.get("outcome") == "accepted"}
        found, seen = [], set()
        for invoke, done in self.reports:
            if not self.accepted(invoke, done):
                continue
            if done["type"] == "unknown":
                key = (invoke["token"], invoke["f"])
                if key in answered or key in seen:
                    continue
                seen.add(key)
            found.append((invoke, done))
        return found

    # -------------------------------------------------------------- leases

    def lease_bounds(self, token: str, before: float | None = None) -> tuple[float, float] | None:
        """(lo, hi): the lease of `token` ran out no sooner than lo and no later than hi,
        counting the renewals that started before `before`. None if its claim is unknown."""
        claim = self.claims.get(token)
        if claim is None:
            return None
        lo = hi = claim["until"]
        for op in self.renews_of.get(token, []):
            start = op.get("db_before", op["time"])
            if before is not None and start >= before:
                continue
            if op["type"] == "ok" and token in op.get("held", []):
                lo = max(lo, op["db_before"] + self.lease)
                hi = max(hi, op["db_after"] + self.lease)
            elif op["type"] == "unknown":
                hi = max(hi, op["time"] + self.lease)
        return lo, hi

    def start_of(self, token: str) -> float | None:
        """When the attempt of `token` claimed its job, by the database clock: the attempt
        row's `started_at`, written by the claim itself (recorded, not inferred from the
        lease end: a claim that sets a wrong lease length would move an inferred start);
        the claim's `from` only for a claim whose attempt row was lost."""
        row = self.attempt_of.get(token)
        if row is not None:
            return row["started_at"]
        return self.claims[token]["from"] if token in self.claims else None

    def end_lo(self, token: str) -> float | None:
        """The earliest the attempt's lease can have ended: its attempt row's close, else
        the known lease (renewals only extend it)."""
        row = self.attempt_of.get(token)
        if row is not None and row["finished_at"] is not None:
            return row["finished_at"]
        bounds = self.lease_bounds(token)
        return None if bounds is None else bounds[0]

    def witness_claim(self, token: str) -> list[dict]:
        if token in self.claims:
            return [self.claims[token]]
        row = self.attempt_of.get(token)
        return [_row("attempts", row)] if row else []

    def accepted(self, invoke: dict, done: dict) -> bool:
        """Whether a report took effect: its answer said so, or (unknown) the tables do."""
        if done["type"] == "ok":
            return done.get("outcome") == "accepted"
        if done["type"] != "unknown":
            return False
        token, f = invoke["token"], invoke["f"]
        if f == "finish":
            result = self.results.get(invoke["job"])
            return result is not None and result["lease_token"] == token
        row = self.attempt_of.get(token)
        closes = {"fail": ("retry", "failed"), "release": ("released", "failed")}[f]
        return row is not None and row["outcome"] in closes


# ------------------------------------------------------------------ the checks


def _lost_or_unexpected(ix: _Index, cut_short: str | None = None) -> Iterable[Violation]:
    cancelled = {op["job"] for op in ix.ops if op["f"] == "cancel" and op["type"] == "ok"
                 and op.get("outcome") == "accepted"}
    for job_id, submit in sorted(ix.submits.items()):
        row = ix.jobs.get(job_id)
        if cut_short and row is not None and row["state"] in ("pending", "running"):
            continue  # inconclusive (see unsettled): the run ended before it could settle
        if row is not None and row["state"] == "cancelled" and job_id in cancelled:
            continue
        if row is None or row["state"] not in ("done", "failed"):
            last = [op for op in ix.by_job[job_id] if op["f"] != "submit"][-2:]
            state = "missing" if row is None else row["state"]
            yield Violation("lost", job_id, f"job {job_id} was accepted and ended {state}",
                            [submit, *last] + ([_row("jobs", row)] if row else []))
    seen = set(ix.jobs) | set(ix.results) | {c["job"] for c in ix.claims.values()}
    for job_id in sorted(seen - set(ix.submits)):
        where = ix.jobs.get(job_id) or ix.results.get(job_id)
        yield Violation("unexpected", job_id, f"job {job_id} appears but was never submitted",
                        [_row("jobs" if job_id in ix.jobs else "results", where)] if where
                        else ix.by_job[job_id][:1])


def _lost_claims(ix: _Index) -> Iterable[Violation]:
    """A claim commits without waiting for the disk (jobs.claim_many): a server crash may
    lose it, and then it is as good as an expired lease. Without a crash after it, an
    answered claim that the attempt rows do not know was lost by the queue itself. "After"
    counts from when the claim ran on the server (its lease's start, the database's clock),
    not from when its answer arrived: a partition can hold the answer back past a crash
    that lost the claim (seen once in CI: answered 1.5 s after it ran, a restart between)."""
    # A restart may crash the server anywhere between its start and its end.
    crashes = [op.get("until", op["time"]) for op in ix.nemesis if op["f"] == "restart"]
    for token, claim in ix.claims.items():
        ran = min(claim["time"], claim.get("from", claim["time"]))
        if token in ix.attempt_of or any(at >= ran - EPSILON for at in crashes):
            continue
        yield Violation("lost", claim["job"],
                        f"attempt {claim['attempt']} of job {claim['job']} was claimed, and "
                        "no attempt row has its token (no restart came after it)", [claim])


def _one_result(ix: _Index) -> Iterable[Violation]:
    accepted: dict[int, list[tuple[dict, dict]]] = defaultdict(list)
    for invoke, done in ix.accepted_reports():
        if invoke["f"] == "finish":
            accepted[invoke["job"]].append((invoke, done))
    for job_id, row in sorted(ix.jobs.items()):
        result = ix.results.get(job_id)
        reports = accepted.get(job_id, [])
        if len(reports) > 1:
            yield Violation("one-result", job_id,
                            f"job {job_id} had {len(reports)} finishes accepted",
                            [op for pair in reports[:2] for op in pair])
        if row["state"] == "done" and result is None:
            yield Violation("one-result", job_id, f"job {job_id} is done without a result",
                            [_row("jobs", row)])
        if result is None:
            continue
        if row["state"] != "done":
            yield Violation("one-result", job_id,
                            f"job {job_id} has a result but is {row['state']}",
                            [_row("jobs", row), _row("results", result)])
        token, at = result["lease_token"], result["created_at"]
        later = [a for a in ix.attempts[job_id]
                 if a["lease_token"] != token and a["started_at"] <= at - EPSILON
                 and (ix.start_of(token) or 0) < a["started_at"]]
        bounds = ix.lease_bounds(token, before=at)
        if later:
            yield Violation("one-result", job_id,
                            f"job {job_id}'s result was written by attempt "
                            f"{ix.attempt_of.get(token, {}).get('attempt')} after attempt "
                            f"{later[0]['attempt']} had taken the lease",
                            [*ix.witness_claim(token), *ix.witness_claim(later[0]["lease_token"]),
                             _row("results", result)])
        elif bounds is not None and at > bounds[1] + EPSILON:
            yield Violation("one-result", job_id,
                            f"job {job_id}'s result was written {at - bounds[1]:.3f} s after "
                            "its lease ran out", [*ix.witness_claim(token), _row("results", result)])
    stored = {r["lease_token"] for r in ix.results.values()}
    for op in ix.verdicts:
        token = op.get("token")
        if op.get("event") == "rejected" and token in stored:
            yield Violation("ambiguous-as-failure", op["job"],
                            f"the worker called attempt {op['attempt']}'s finish refused, but "
                            "its result was stored", [op, _row("results", ix.results[op["job"]])])
        elif op.get("event") == "finished" and token is not None and token not in stored:
            result = ix.results.get(op["job"])
            yield Violation("false-success", op["job"],
                            f"the worker called attempt {op['attempt']}'s finish done, but "
                            "no result of that attempt was stored",
                            [op] + ([_row("results", result)] if result else []))


def _stale_accepted(ix: _Index) -> Iterable[Violation]:
    for invoke, done in ix.accepted_reports():
        token, job_id, sent = invoke["token"], invoke["job"], invoke["time"]
        mine = ix.attempt_of.get(token)
        number = invoke.get("attempt") or (mine or {}).get("attempt")
        later = [a for a in ix.attempts[job_id]
                 if number is not None and a["attempt"] > number and a["lease_token"] != token
                 and a["started_at"] < sent - EPSILON]
        if later:
            yield Violation("stale-accepted", job_id,
                            f"a {invoke['f']} by attempt {number} was accepted after attempt "
                            f"{later[0]['attempt']} had claimed the job",
                            [*ix.witness_claim(token), *ix.witness_claim(later[0]["lease_token"]),
                             invoke, done])
            continue
        bounds = ix.lease_bounds(token, before=sent)
        if bounds is not None and sent > bounds[1] + EPSILON:
            yield Violation("stale-accepted", job_id,
                            f"a {invoke['f']} by attempt {number} was accepted "
                            f"{sent - bounds[1]:.3f} s after its lease ran out",
                            [*ix.witness_claim(token), invoke, done])


def _lease_overlap(ix: _Index) -> Iterable[Violation]:
    for job_id, rows in sorted(ix.attempts.items()):
        for a, b in zip(rows, rows[1:], strict=False):
            end, start = ix.end_lo(a["lease_token"]), ix.start_of(b["lease_token"])
            if a["finished_at"] is None:
                yield Violation("lease-overlap", job_id,
                                f"attempt {b['attempt']} of job {job_id} was claimed while "
                                f"attempt {a['attempt']}'s lease was never ended (no report, "
                                "no expiry, no cancel)",
                                [*ix.witness_claim(a["lease_token"]), _row("attempts", a),
                                 *ix.witness_claim(b["lease_token"])])
            elif end is not None and start is not None and start < end - EPSILON:
                yield Violation("lease-overlap", job_id,
                                f"attempt {b['attempt']} of job {job_id} was claimed "
                                f"{end - start:.3f} s before attempt {a['attempt']}'s lease ended",
                                [*ix.witness_claim(a["lease_token"]), _row("attempts", a),
                                 *ix.witness_claim(b["lease_token"])])
    for invoke, done in ix.renews:
        if done["type"] != "ok":
            continue
        for token in done.get("held", []):
            bounds = ix.lease_bounds(token, before=done["db_before"])
            if bounds is not None and done["db_before"] > bounds[1] + EPSILON:
                claim = ix.claims[token]
                previous = [op for op in ix.renews_of[token]
                            if op["type"] == "ok" and op["db_before"] < done["db_before"]][-1:]
                yield Violation("renew-after-expiry", claim["job"],
                                f"attempt {claim['attempt']}'s lease was renewed "
                                f"{done['db_before'] - bounds[1]:.3f} s after it ran out",
                                [claim, *previous, invoke, done])


def _drawn_delays(ix: _Index) -> dict[str, dict]:
    """token -> the fail report that drew its retry delay. The recorder (`instrument`)
    writes the delay on the report's completion (`jobs.fail` draws it while it runs), so it
    is read there; an invoke that carries one (a hand-written history) counts too."""
    delays = {}
    for invoke, done in ix.reports:
        if invoke["f"] != "fail":
            continue
        for op in (done, invoke):
            if op.get("delay") is not None:
                delays[invoke["token"]] = op
                break
    return delays


def _attempts(ix: _Index, policy: RetryPolicy | None) -> Iterable[Violation]:
    delays = _drawn_delays(ix)
    for job_id, row in sorted(ix.jobs.items()):
        rows = ix.attempts[job_id]
        numbers = [a["attempt"] for a in rows]
        released = sum(a["outcome"] == "released" for a in rows)
        problem = None
        if numbers != list(range(1, len(numbers) + 1)) or len(numbers) != row["attempts"]:
            problem = f"attempt numbers {numbers} for {row['attempts']} attempts"
        elif row["attempts"] - row["handbacks"] > row["max_attempts"]:
            problem = (f"{row['attempts']} attempts, {row['handbacks']} handed back, over "
                       f"the cap of {row['max_attempts']}")
        elif row["handbacks"] != released:
            problem = f"{row['handbacks']} hand-backs counted, {released} attempts released"
        if problem:
            yield Violation("attempts", job_id, f"job {job_id}: {problem}",
                            [_row("jobs", row), *(_row("attempts", a) for a in rows[-2:])])
        for a, b in zip(rows, rows[1:], strict=False):
            if a["outcome"] != "retry" or a["lease_token"] not in delays:
                continue
            invoke = delays[a["lease_token"]]
            delay = invoke["delay"]
            if policy is not None:
                low, high = policy.floor(a["attempt"]), policy.ceiling(a["attempt"])
                if not low - EPSILON <= delay <= high + EPSILON:
                    yield Violation("retry-delay", job_id,
                                    f"attempt {a['attempt']} drew a delay of {delay:.3f} s, "
                                    f"outside [{low:g}, {high:g}]", [invoke])
            waited = b["started_at"] - a["finished_at"]
            if waited < delay - EPSILON:
                yield Violation("retry-delay", job_id,
                                f"attempt {b['attempt']} started {waited:.3f} s after attempt "
                                f"{a['attempt']} failed, before its delay of {delay:.3f} s",
                                [invoke, _row("attempts", a), *ix.witness_claim(b["lease_token"])])


def _side_effects(ix: _Index) -> Iterable[Violation]:
    applied: dict[str, list[dict]] = defaultdict(list)
    for op in ix.effects:
        if op.get("applied"):
            applied[op["key"]].append(op)
    for key, ops in sorted(applied.items()):
        if len(ops) > 1:
            yield Violation("side-effect", ops[0].get("job"),
                            f"the effect keyed {key!r} took effect {len(ops)} times", ops[:2])
    stored = {r["key"]: r for r in ix.snap.get("effects", [])}
    for job_id, row in sorted(ix.jobs.items()):
        key = (row.get("payload") or {}).get("key")
        if row["state"] == "done" and key is not None and key not in stored:
            yield Violation("side-effect", job_id,
                            f"job {job_id} is done but its effect {key!r} never took effect",
                            [_row("jobs", row), *[op for op in ix.effects if op.get("key") == key][:2]])


def _outage_after(ix: _Index, start: float, end: float) -> float:
    """Seconds of outage (server restart, partition, every worker paused) in [start, end]."""
    total = 0.0
    for op in ix.nemesis:
        if op["f"] in OUTAGES:
            begin, stop = op.get("started", op["time"]), op.get("until", op["time"])
            total += max(0.0, min(stop, end) - max(begin, start))
    return total


_FREES = ("finished", "rejected", "retrying", "failed", "handed-back", "abandoned")


def _expired_leases(ix: _Index) -> list[tuple[float, float]]:
    """(lease end, when the job was claimed again or given up) of every lease that ran out:
    the claim takes expired leases oldest first, so an older one is served first."""
    found = []
    for job_id, rows in ix.attempts.items():
        if not rows:
            continue  # a job never claimed (cancelled while pending)
        for a, b in zip(rows, [*rows[1:], None], strict=True):
            if a["outcome"] != "expired" or a["finished_at"] is None:
                continue
            again = ix.start_of(b["lease_token"]) if b is not None else None
            if again is None:
                again = ix.jobs.get(job_id, {}).get("finished_at") or float("inf")
            found.append((a["finished_at"], again))
    return found


def _first_free_slot(ix: _Index, after: float, concurrency: int | None,
                     lease_end: float | None = None) -> float | None:
    """The first moment at or after `after` when some worker could claim this job: one is
    up (a worker process that has had an answer from the database), not killed or stopped,
    not paused, holding fewer than `concurrency` jobs (claims answered minus the worker's
    verdicts that free a slot), and no lease that ran out before `lease_end` still waits
    to be taken (those come first). None if there was no such moment before the end."""
    if concurrency is None:
        return after
    older = [] if lease_end is None else [(e, r) for e, r in _expired_leases(ix)
                                          if e < lease_end - EPSILON]
    held: dict[str, int] = defaultdict(int)
    up: set[str] = set()
    paused: set[str] = set()

    def free(t: float) -> bool:
        return (any(held[w] < concurrency for w in up - paused)
                and not any(e <= t < r - EPSILON for e, r in older))

    ordered = sorted(ix.ops, key=lambda o: o["time"])
    workers = {op["process"] for op in ordered if op["f"] == "started"}
    gone: set[str] = set()
    for n, op in enumerate(ordered):
        if op["time"] >= after and (n == 0 or ordered[n - 1]["time"] < after) and free(after):
            return after
        f, who = op["f"], op["process"]
        # Up from its first answered statement (connected, registered), not from its start.
        if op["type"] == "ok" and who in workers and who not in gone:
            up.add(who)
        if f in ("kill", "terminate", "exit"):
            gone.add(op.get("target"))
            up.discard(op.get("target"))
        elif f == "pause":
            paused.add(op.get("target"))
        elif f == "resume":
            paused.discard(op.get("target"))
        elif f == "claim" and op["type"] == "ok" and op.get("token"):
            held[who] += 1
        elif f == "verdict" and op.get("event") in _FREES:
            held[who] = max(0, held[who] - 1)
        following = ordered[n + 1] if n + 1 < len(ordered) else None
        if following is not None and op.get("call") and following.get("call") == op.get("call"):
            continue  # one statement's claims land together
        if op["time"] >= after and free(op["time"]):
            return op["time"]
    return None


def _reclaim(ix: _Index, poll: float, slack: float,
             concurrency: int | None = None) -> Iterable[Violation]:
    final = ix.snap.get("now")
    for kill in ix.nemesis:
        if kill["f"] != "kill":
            continue
        at, victim = kill["time"], kill["target"]
        for token, claim in ix.claims.items():
            if claim["process"] != victim or (ix.start_of(token) or claim["from"]) > at:
                continue
            row = ix.attempt_of.get(token)
            if row is None:
                continue  # the claim itself was lost in a restart (see _lost_claims)
            if row["outcome"] not in (None, "expired"):
                continue  # reported (the report may have crossed the kill): not left behind
            bounds = ix.lease_bounds(token, before=at)
            if bounds is None:
                continue
            free = _first_free_slot(ix, max(bounds[1], at), concurrency, bounds[1])
            if free is None:
                continue  # no worker could claim before the run ended
            deadline = free + poll + slack
            deadline += _outage_after(ix, at, deadline)
            job_id = claim["job"]
            after = [a for a in ix.attempts[job_id] if a["attempt"] > claim["attempt"]]
            job = ix.jobs.get(job_id, {})
            if after:
                again, how = ix.start_of(after[0]["lease_token"]), "claimed again"
            elif job.get("state") == "failed" and job.get("finished_at"):
                again, how = job["finished_at"], "given up"
            else:
                again, how = None, "never claimed again"
            if again is None and final is not None and final < deadline:
                continue  # the run ended first
            if again is None or again > deadline + EPSILON:
                late = "" if again is None else (
                    f" {again - free:.3f} s after its lease had run out and a worker was free")
                yield Violation("reclaim", job_id,
                                f"job {job_id}, held by killed {victim}, was {how}{late}",
                                [kill, claim, *(ix.witness_claim(after[0]["lease_token"]) if after else [])])


def _tenant_cap(ix: _Index, cap: int) -> Iterable[Violation]:
    """The first instant each tenant had more than `cap` attempts open, with those attempts."""
    tenant_of = {job_id: row.get("tenant_id") for job_id, row in ix.jobs.items()}
    edges: dict[Any, list[tuple[float, int, dict]]] = defaultdict(list)
    for job_id, rows in ix.attempts.items():
        for row in rows:
            end = row["finished_at"] if row["finished_at"] is not None else ix.snap.get("now")
            bounds = ix.lease_bounds(row["lease_token"])
            if bounds is not None and end is not None:
                end = min(end, bounds[0])  # the cap counts live leases: a lapsed one is out
            edges[tenant_of.get(job_id)].append((row["started_at"], 1, row))
            if end is not None:
                edges[tenant_of.get(job_id)].append((end, 0, row))  # a close before a start
    for tenant, events in edges.items():
        open_rows: dict[str, dict] = {}
        for _, starts, row in sorted(events, key=lambda e: e[:2]):
            if not starts:
                open_rows.pop(row["lease_token"], None)
                continue
            open_rows[row["lease_token"]] = row
            if len(open_rows) > cap:
                yield Violation("tenant-cap", row["job_id"],
                                f"tenant {tenant} had {len(open_rows)} attempts open at once "
                                f"(cap {cap})", [_row("attempts", r) for r in open_rows.values()])
                break


def _lease_length(ix: _Index) -> Iterable[Violation]:
    for token, claim in ix.claims.items():
        row = ix.attempt_of.get(token)
        if row is None or claim.get("until") is None:
            continue
        length = claim["until"] - row["started_at"]
        if abs(length - ix.lease) > LEASE_TOLERANCE * ix.lease + EPSILON:
            yield Violation("lease-length", claim["job"],
                            f"attempt {claim['attempt']} of job {claim['job']} was claimed "
                            f"with a lease of {length:.3f} s by the database clock, not "
                            f"{ix.lease:g} s (a lease computed from another clock, or of "
                            "another length)", [claim, _row("attempts", row)])


def _terminal_left(ix: _Index) -> Iterable[Violation]:
    retries: dict[int, int] = defaultdict(int)
    for row in ix.snap.get("audit", []):
        if row.get("action") == "retry":
            retries[row["job_id"]] += 1
    used: dict[int, int] = defaultdict(int)
    for change in sorted(ix.snap.get("transitions", []), key=lambda r: (r["at"], r["id"])):
        old, new, job_id = change["old_state"], change["new_state"], change["job_id"]
        if old not in TERMINAL:
            continue
        if old == "failed" and new == "pending" and used[job_id] < retries[job_id]:
            used[job_id] += 1  # an operator's audited retry
            continue
        result = ix.results.get(job_id)
        token = (result or {}).get("lease_token") if new == "done" else None
        yield Violation("terminal-left", job_id,
                        f"job {job_id} left its terminal state {old} for {new} "
                        "without an audited retry",
                        [_row("transitions", change), *(ix.witness_claim(token) if token else []),
                         *([_row("results", result)] if token else [])])


def _worker_died(ix: _Index) -> Iterable[Violation]:
    for op in ix.ops:
        if op["f"] == "exit" and op.get("cause") == "error":
            yield Violation("worker-died", None,
                            f"worker {op.get('target')} died of an error (exit status "
                            f"{op.get('status')}): {op.get('line') or 'no log line'}", [op])


def unsettled(snapshot: dict, cause: str) -> list[dict[str, Any]]:
    """The jobs a run cut short left pending or running: inconclusive, with `cause`, never
    counted as lost (the run ended before the queue could settle them)."""
    return [{"job": r["job_id"], "state": r["state"], "attempts": r["attempts"], "cause": cause}
            for r in snapshot.get("jobs", []) if r["state"] in ("pending", "running")]


def opportunities(ops: list[dict], snapshot: dict, *, lease: float,
                  tenant_cap: int | None = None) -> dict[str, dict[str, Any]]:
    """Per check, how many situations of the run it judged (`count`) and what they were
    (`what`): a check whose count is 0 could not have fired in this run, whatever the
    queue did."""
    ix = _Index(list(ops), snapshot, lease)
    late_reports = 0
    for invoke, _done in ix.reports:
        token, job_id, sent = invoke["token"], invoke["job"], invoke["time"]
        mine = ix.attempt_of.get(token) or {}
        later = any(a["attempt"] > mine.get("attempt", invoke.get("attempt") or 0)
                    and a["started_at"] < sent for a in ix.attempts.get(job_id, []))
        bounds = ix.lease_bounds(token, before=sent)
        job = ix.jobs.get(job_id) or {}
        ended = (job.get("state") in ("failed", "cancelled") and job.get("finished_at")
                 and job["finished_at"] < sent)
        if later or ended or (bounds is not None and sent > bounds[1] + EPSILON):
            late_reports += 1
    late_renewals = sum(1 for _i, done in ix.renews if done["type"] == "ok"
                        for token in _i.get("tokens", [])
                        if (b := ix.lease_bounds(token, before=done["db_before"])) is not None
                        and done["db_before"] > b[1] + EPSILON)
    takeovers = sum(1 for rows in ix.attempts.values() for a in rows[:-1]
                    if a["outcome"] == "expired")
    retries = sum(1 for rows in ix.attempts.values() for a, b in zip(rows, rows[1:], strict=False)
                  if a["outcome"] == "retry" and a["lease_token"] in _drawn_delays(ix))
    capped = sum(1 for row in ix.jobs.values()
                 if row["attempts"] - row["handbacks"] >= row["max_attempts"])
    expired_last = sum(1 for row in ix.jobs.values() for a in ix.attempts.get(row["job_id"], [])
                       if a["outcome"] == "expired"
                       and a["attempt"] - row["handbacks"] >= row["max_attempts"])
    terminal_touch = late_reports + sum(1 for op in ix.ops if op["f"] == "cancel"
                                        and op.get("outcome") == "accepted")
    kills = [op for op in ix.nemesis if op["f"] == "kill"]
    held_by_killed = sum(1 for k in kills for c in ix.claims.values()
                         if c["process"] == k.get("target") and c["time"] <= k["time"])
    contended = sum(1 for op in ix.ops if op["f"] == "contend")
    found = {
        "lost": (len(ix.submits), "jobs submitted"),
        "unexpected": (len(ix.claims), "claims answered"),
        "one-result": (sum(1 for r in ix.jobs.values() if len(ix.attempts.get(r["job_id"], [])) > 1),
                       "jobs run more than once"),
        "ambiguous-as-failure": (sum(1 for _i, d in ix.reports if d["type"] == "unknown"),
                                 "reports whose answer was lost"),
        "false-success": (sum(1 for _i, d in ix.reports if d["type"] == "unknown"),
                          "reports whose answer was lost"),
        "stale-accepted": (late_reports, "reports sent with a lease that had run out, been "
                           "taken over, or whose job had been failed or cancelled"),
        "lease-overlap": (takeovers + contended, "takeovers of an expired lease and claims "
                          "contending for one row"),
        "renew-after-expiry": (late_renewals, "renewals sent after their lease ran out"),
        "lease-length": (len(ix.claims), "claims answered"),
        "attempts": (capped + expired_last, "jobs that used up their attempts, and leases "
                     "that expired on a last attempt"),
        "retry-delay": (retries, "retries after a drawn delay"),
        "side-effect": (len(ix.effects), "effects attempted"),
        "reclaim": (held_by_killed, "jobs held by a killed worker"),
        "terminal-left": (terminal_touch, "reports after a job's end and cancellations"),
        "worker-died": (sum(1 for op in ix.ops if op["f"] == "exit"), "worker processes ended"),
    }
    if tenant_cap is not None:
        found["tenant-cap"] = (len(ix.attempts), "jobs claimed fairly")
    return {name: {"count": n, "what": what} for name, (n, what) in found.items()}


def unknowns(ops: list[dict], snapshot: dict) -> list[dict[str, Any]]:
    """Every report whose answer was lost (`unknown`), with what the snapshot says it did
    (`accepted`) and the worker's own verdict on that attempt afterwards (`verdict`)."""
    ix = _Index(list(ops), snapshot, lease=0.0)
    verdicts = {(op["token"], op["job"]): op["event"] for op in ix.verdicts if op.get("token")}
    return [{"f": invoke["f"], "job": invoke["job"], "attempt": invoke.get("attempt"),
             "accepted": ix.accepted(invoke, done),
             "verdict": verdicts.get((invoke["token"], invoke["job"]))}
            for invoke, done in ix.reports if done["type"] == "unknown"]


def check(ops: list[dict], snapshot: dict, *, lease: float, poll: float,
          policy: RetryPolicy | None = None, slack: float = 1.0,
          concurrency: int | None = None, tenant_cap: int | None = None,
          only: Iterable[str] | None = None, cut_short: str | None = None) -> list[Violation]:
    """Every violation of the history `ops` with its final `snapshot`, check by check.

    `lease` and `poll` are the workers' settings; `policy` the retry policy they failed
    jobs with (None: the delays are not checked against bounds); `slack` the seconds the
    reclaim check allows on top of lease + poll (process scheduling on a busy machine);
    `concurrency` the jobs each worker runs at once: the reclaim clock then starts when
    some worker had a free slot (None: at once). `tenant_cap`: the fair claim's per-tenant
    cap the workers ran with (None: check 8 is not run).
    `only` limits the run to some checks by name. `cut_short`: why the run ended before
    every job settled (None: it did not); pending and running jobs are then inconclusive
    (`unsettled`), not lost.
    """
    ix = _Index(list(ops), snapshot, lease)
    found: list[Violation] = []
    groups = [("lost", lambda: _lost_or_unexpected(ix, cut_short)),
              ("lost", lambda: _lost_claims(ix)),
              ("one-result", lambda: _one_result(ix)),
              ("stale-accepted", lambda: _stale_accepted(ix)),
              ("lease-overlap", lambda: _lease_overlap(ix)),
              ("attempts", lambda: _attempts(ix, policy)),
              ("side-effect", lambda: _side_effects(ix)),
              ("reclaim", lambda: _reclaim(ix, poll, slack, concurrency)),
              ("lease-length", lambda: _lease_length(ix)),
              ("terminal-left", lambda: _terminal_left(ix)),
              ("worker-died", lambda: _worker_died(ix))]
    if tenant_cap is not None:
        groups.append(("tenant-cap", lambda: _tenant_cap(ix, tenant_cap)))
    wanted = None if only is None else set(only)
    for name, run in groups:
        if wanted is None or name in wanted or any(CHECKS[w] == CHECKS[name] for w in wanted):
            found.extend(run())
    return found
