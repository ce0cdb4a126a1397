"""The fair claim's tenant cap holds when several claimers claim at the same instant.

Four claimers, each on its own connection and in its own transaction, claim tenant 1's
jobs with tenant_cap=3, each for another kind (as workers started with --kinds would, so
their choices never meet on a row lock), and keep their transactions open until the test
lets them commit. A claim that counted running jobs from a snapshot taken before the
others committed would see 0 running and take 3 each: 12. The test steps them by hand:
it waits until every claimer either holds its open transaction or waits for a lock
(pg_locks says which), lets the holders commit, and repeats.
"""

from __future__ import annotations

import threading
import time

from cachequeue import db
from cachequeue.queue import fairness, jobs

KINDS = ["noop", "flaky", "summarise", "always_fail"]
CAP = 3
WAIT = 30.0


class Claimer(threading.Thread):
    """claim_fair in a transaction that stays open until `may_commit` is set."""

    def __init__(self, schema: str, kind: str, barrier: threading.Barrier) -> None:
        super().__init__(daemon=True, name=f"claimer-{kind}")
        self.schema, self.kind, self.barrier = schema, kind, barrier
        self.pid: int | None = None
        self.connected, self.holding, self.may_commit = (threading.Event() for _ in range(3))
        self.claims: list[jobs.Claim] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with db.connect(self.schema) as conn:
                self.pid = conn.info.backend_pid
                self.connected.set()
                self.barrier.wait(WAIT)
                with conn.transaction():
                    self.claims = fairness.claim_fair(conn, 10, kinds=[self.kind],
                                                      tenant_cap=CAP)
                    self.holding.set()
                    assert self.may_commit.wait(WAIT), "never told to commit"
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc
            self.holding.set()


def _waiting_for_a_lock(conn, pids: list[int]) -> set[int]:
    # pg_locks, not pg_stat_activity's wait_event: a lock is granted at the holder's
    # commit, while the waiter's wait_event lasts until the waiter has woken up.
    rows = conn.execute("SELECT pid FROM pg_locks WHERE pid = ANY (%s)"
                        " AND locktype = 'advisory' AND NOT granted", (pids,)).fetchall()
    return {pid for (pid,) in rows}


def _settled(conn, claimers: list[Claimer]) -> list[Claimer]:
    """Wait until each claimer still running holds its transaction or waits for a lock;
    return the holders. Bounded: TimeoutError after WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        holding = {c: c.holding.is_set() for c in claimers}  # one look, for both lists
        others = [c.pid for c in claimers if not holding[c]]
        if len(_waiting_for_a_lock(conn, others)) == len(others):
            return [c for c in claimers if holding[c]]
        time.sleep(0.005)  # polling the server's view, not waiting for something to happen
    raise TimeoutError("the claimers never settled: "
                       f"{[(c.kind, c.holding.is_set()) for c in claimers]}")


def test_concurrent_fair_claims_never_exceed_the_tenant_cap(conn, schema):
    fairness.install(conn)
    for kind in KINDS:
        for n in range(5):
            jobs.submit(conn, tenant_id=1, kind=kind, payload={"n": n})
    barrier = threading.Barrier(len(KINDS))
    claimers = [Claimer(schema, kind, barrier) for kind in KINDS]
    for claimer in claimers:
        claimer.start()
    try:
        assert all(c.connected.wait(WAIT) for c in claimers)
        running, rounds = list(claimers), 0
        while running:
            holders = _settled(conn, running)
            assert holders, "every claimer waits for a lock and none holds one"
            for claimer in holders:
                claimer.may_commit.set()
                claimer.join(WAIT)
                assert not claimer.is_alive() and claimer.error is None, claimer.error
            running = [c for c in running if c not in holders]
            rounds += 1
    finally:
        for claimer in claimers:
            claimer.may_commit.set()
            claimer.join(WAIT)
    taken = {c.kind: len(c.claims) for c in claimers}
    live = conn.execute("SELECT count(*) FROM jobs WHERE state = 'running'"
                        " AND tenant_id = 1").fetchone()[0]
    assert live == sum(taken.values()) == CAP, taken
    assert rounds == len(KINDS)  # they took turns: one claimer held the tenant at a time


def test_fair_claims_of_other_tenants_do_not_wait_for_each_other(conn, schema):
    fairness.install(conn)
    for tenant in (1, 2):
        for n in range(3):
            jobs.submit(conn, tenant_id=tenant, kind="noop", payload={"n": n})
    with db.connect(schema) as other, conn.transaction():
        other.execute("SET lock_timeout = '5s'")  # a wait would fail the test, not hang it
        mine = fairness.claim_fair(conn, 10, tenant_cap=CAP)
        assert {c.tenant_id for c in mine} == {1, 2}
        # Tenants 1 and 2 are locked by this open transaction; a third tenant is not.
        jobs.submit(other, tenant_id=3, kind="noop", payload={})
        theirs = fairness.claim_fair(other, 10, tenant_cap=CAP)
        assert [c.tenant_id for c in theirs] == [3]
