"""The prober: a scripted client that gives every check its situation on every seed.

A nemesis lands where chance puts it: a pause may or may not meet a lease on its last
attempt, two workers may or may not claim one row at the same instant. The prober does not
wait for chance. Before the fleet starts (`driver`), one process of the run (recorded like
a worker, through the same variant's functions) walks its own jobs of kind `PROBE_KIND`
through the situations each check judges, one after the other, each settled before the
next:

1. `backoff`: a failed attempt, then a claim at once: the retry is not due yet (retry-delay);
2. `late`: a finish after the lease ran out, nobody holding the job yet; a renewal of that
   lease; the takeover; the old holder's finish again (stale-accepted, renew-after-expiry,
   lease-overlap; a takeover that does not count its attempt crashes here);
3. `last`: a job with one attempt whose lease runs out: the next claim must leave it (the
   cap), the sweep fails it, and the old holder's finish must not revive it (attempts,
   terminal-left);
4. `cancel-running` and `cancel-pending`: a finish for a job cancelled while held, a claim
   after a pending job was cancelled (terminal-left);
5. `contend`: two claims for one row at once, on two connections: the first holds its row
   lock (its transaction open) until the second has either returned or is waiting for that
   lock; only then does the first commit (lease-overlap: a claim without row locks takes
   the row twice).

Every wait is bounded (a mutant whose lease never ends must not stop the run). Each
scenario is recorded as an `info` operation `probe` with its name before it starts.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import psycopg

from .. import db
from ..queue import jobs, registry
from ..queue.retry import RetryableError, RetryPolicy
from .history import Recorder

__all__ = ["PROBE_KIND", "SCENARIOS", "probe"]

PROBE_KIND = "verify_probe"
SCENARIOS = ("backoff", "late", "last", "cancel-running", "cancel-pending", "contend")


class _Prober:
    def __init__(self, cfg: dict[str, Any], rec: Recorder, policy: RetryPolicy) -> None:
        self.cfg, self.rec, self.policy = cfg, rec, policy
        self.name = cfg["name"]
        self.lease = cfg["lease"]
        self.rng = random.Random(cfg["seed"])
        self.conn = self._connect()
        self.submitted = 0

    def _connect(self) -> psycopg.Connection:
        return db.connect(self.cfg["schema"], url=self.cfg["url"], prepare_threshold=None)

    def submit(self, max_attempts: int = 3) -> int:
        self.submitted += 1
        key = f"probe-{self.cfg['seed']}-{self.submitted}"
        job = jobs.submit(self.conn, tenant_id=1, kind=PROBE_KIND, payload={"probe": key},
                          idempotency_key=key, max_attempts=max_attempts)
        self.rec.op("ok", "submit", job=job, key=key, max_attempts=max_attempts)
        return job

    def claim(self, conn: psycopg.Connection | None = None) -> list[jobs.Claim]:
        return jobs.claim_many(conn or self.conn, 1, lease=self.lease, kinds=[PROBE_KIND],
                               worker=self.name)

    def claim_until(self, seconds: float) -> list[jobs.Claim]:
        """Claim until something comes (bounded): a retry that is due later, a takeover."""
        give_up = time.monotonic() + seconds
        while True:
            got = self.claim()
            if got or time.monotonic() >= give_up:
                return got
            time.sleep(0.02)

    def wait_past(self, claim: jobs.Claim) -> None:
        """Until the database clock is past the claim's lease (at most 3 leases: a lease of
        another length, from another clock, is not waited for)."""
        give_up = time.monotonic() + 3 * self.lease
        while time.monotonic() < give_up:
            now = self.conn.execute("SELECT cq_now()").fetchone()[0]
            if now > claim.locked_until:
                return
            time.sleep(0.02)

    def finish(self, claim: jobs.Claim, conn: psycopg.Connection | None = None) -> bool:
        # Through finish_many, as the Worker reports (its completion batch): a mutant of the
        # batched statement (unfenced-batch) meets the prober's late reports too.
        return jobs.finish_many(conn or self.conn,
                                [(claim, {"probe": claim.job_id, "attempt": claim.attempt})])[0]

    def finish_all(self, claims: list[jobs.Claim]) -> None:
        for claim in claims:
            self.finish(claim)

    def cancel(self, job: int) -> bool:
        call = self.rec.call()
        self.rec.op("invoke", "cancel", call=call, job=job)
        done = jobs.cancel(self.conn, tenant_id=1, job_id=job, actor="verify-prober",
                           reason="the prober cancels it")
        self.rec.op("ok", "cancel", call=call, job=job,
                    outcome="accepted" if done else "rejected")
        return done

    # ------------------------------------------------------------------ scenarios

    def backoff(self) -> None:
        self.submit()
        first = self.claim_until(2.0)
        for claim in first:
            jobs.fail(self.conn, claim, RetryableError("the prober's planned failure"),
                      policy=self.policy, rng=self.rng)
        again = self.claim_until(self.policy.cap + 2.0)
        self.finish_all(again)

    def late(self) -> None:
        self.submit()
        held = self.claim_until(2.0)
        for claim in held:
            self.wait_past(claim)
            self.finish(claim)  # after the lease ran out: refused
            registry.beat(self.conn, self.name, [claim], self.lease)  # refused too
            taken = self.claim_until(2.0)  # the takeover of the expired lease
            self.finish(claim)  # the old holder again, after the takeover: refused
            self.finish_all(taken)

    def last(self) -> None:
        self.submit(max_attempts=1)
        held = self.claim_until(2.0)
        for claim in held:
            self.wait_past(claim)
            again = self.claim()  # must leave it (no attempt left); the sweep fails it
            self.claim()  # a second look: the sweep has run by now, whatever the claim did
            self.finish(claim)  # the old holder's late finish: refused, the job stays failed
            self.finish_all(again)

    def cancel_running(self) -> None:
        job = self.submit()
        held = self.claim_until(2.0)
        self.cancel(job)
        self.finish_all(held)  # refused: the job was cancelled

    def cancel_pending(self) -> None:
        job = self.submit()
        self.cancel(job)
        self.finish_all(self.claim())  # nothing to claim

    def contend(self) -> None:
        job = self.submit()
        other = self._connect()
        box: dict[str, Any] = {}

        def second() -> None:
            try:
                box["claims"] = self.claim(other)
            except Exception as exc:  # raised again in this thread, below
                box["error"] = exc

        try:
            with self.conn.transaction():
                first = self.claim()
                thread = threading.Thread(target=second, daemon=True)
                thread.start()
                pid = other.info.backend_pid
                give_up = time.monotonic() + 3.0
                with db.connect(self.cfg["schema"], url=self.cfg["url"]) as watch:
                    while thread.is_alive() and time.monotonic() < give_up:
                        waiting = watch.execute(
                            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity "
                            "WHERE pid = %s", [pid]).fetchone()
                        if waiting and waiting[0]:
                            break
                        time.sleep(0.01)
                self.rec.op("info", "contend", job=job, blocked=thread.is_alive())
            thread.join(10.0)
            if "error" in box:
                raise box["error"]
            self.finish_all(first)
            for claim in box.get("claims", []):
                self.finish(claim, other)
        finally:
            other.close()

    def run(self) -> None:
        for name in SCENARIOS:
            self.rec.op("info", "probe", scenario=name)
            getattr(self, name.replace("-", "_"))()
        self.conn.close()


def probe(cfg: dict[str, Any], rec: Recorder, policy: RetryPolicy) -> None:
    """Walk the scenarios (the module docstring) in this process, recorded by `rec`."""
    _Prober(cfg, rec, policy).run()
