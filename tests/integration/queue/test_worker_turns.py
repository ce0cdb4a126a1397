"""Worker.run_once() turn by turn, against real PostgreSQL: what one turn does and counts,
heartbeats and a lease that runs out, and the fenced completion batch (flushed when full or
due, refused row by row after a takeover, sent again after a lost answer). The worker's
clock is a ManualClock and its connection's database clock is set by hand; the only waits
are for a handler thread's wake-up byte."""

import threading
from datetime import timedelta

import psycopg
import pytest
from frozen import T0
from turns import WAIT

from cachequeue import db
from cachequeue.queue import Worker, jobs
from cachequeue.queue.worker import BATCH_WAIT


def states(conn, ids):
    return [jobs.status(conn, tenant_id=1, job_id=i).state for i in ids]


def submit(conn, n, **kw):
    db.set_clock(conn, T0)
    return [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": k}, **kw) for k in range(n)]


def test_one_turn_claims_for_the_free_slots_and_returns_what_it_did(conn, harness):
    gate = threading.Event()
    ids = submit(conn, 3)
    h = harness({"noop": lambda payload: gate.wait(WAIT) and payload["n"]}, concurrency=2)
    first = h.turn()
    assert first["claimed"] == 2 and first["finished"] == 0
    assert states(conn, ids) == ["running", "running", "pending"]
    assert h.turn()["claimed"] == 0, "both slots are busy: nothing more is claimed"
    gate.set()
    # The two results join the batch (their slots are free at once: the third job is
    # claimed), but nothing is written until the batch is due.
    total = h.turns_until(lambda t: t["claimed"] == 1)
    assert total["finished"] == 0 and h.worker.batched >= 1
    assert states(conn, ids)[:2] == ["running", "running"]
    total = h.turns_until(lambda t: h.worker.batched == 3)
    h.clock.advance(BATCH_WAIT)  # batch_wait: the oldest result has waited long enough
    flushed = h.turn()
    assert (flushed["finished"], flushed["batches"], flushed["statements"]) == (3, 1, 1)
    assert states(conn, ids) == ["done"] * 3
    outputs = conn.execute("SELECT output FROM job_results ORDER BY job_id").fetchall()
    assert [o[0] for o in outputs] == [0, 1, 2]


def test_a_full_batch_is_flushed_in_the_turn_that_fills_it(conn, harness):
    ids = submit(conn, 4)
    h = harness({"noop": lambda payload: None}, concurrency=4, batch=4)
    total = h.turns_until(lambda t: t["finished"] == 4)
    assert total["batches"] == 1 and total["claimed"] == 4
    assert states(conn, ids) == ["done"] * 4
    assert h.clock() == 0, "no time passed: the size, not the wait, flushed it"


def test_with_batching_off_every_success_is_its_own_statement(conn, harness):
    ids = submit(conn, 3)
    h = harness({"noop": lambda payload: None}, concurrency=3, batch=1)
    total = h.turns_until(lambda t: t["finished"] == 3)
    assert total["batches"] == 0
    assert states(conn, ids) == ["done"] * 3


def test_a_failure_is_reported_at_once_while_successes_wait_for_the_batch(conn, harness):
    db.set_clock(conn, T0)
    good = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    bad = jobs.submit(conn, tenant_id=1, kind="always_fail", payload={}, max_attempts=1)
    unstorable = jobs.submit(conn, tenant_id=1, kind="flaky", payload={})

    def boom(payload):
        raise RuntimeError("vendor down")

    h = harness({"noop": lambda payload: "ok", "always_fail": boom,
                 "flaky": lambda payload: {"at": object()}}, concurrency=3)
    total = h.turns_until(lambda t: t["failed"] == 2)
    assert total["finished"] == 0
    assert states(conn, [good, bad, unstorable]) == ["running", "failed", "failed"]
    assert jobs.status(conn, tenant_id=1, job_id=unstorable).last_error.startswith("InvalidJob")
    h.clock.advance(BATCH_WAIT)
    assert h.turn()["finished"] == 1
    assert states(conn, [good]) == ["done"]


def test_a_late_flush_after_a_takeover_is_refused_for_that_row_only(conn, harness):
    ids = submit(conn, 3)
    h = harness({"noop": lambda payload: payload["n"]}, concurrency=3, lease=30)
    h.turns_until(lambda t: h.worker.batched == 3)
    # While the results wait, the second job's lease runs out (as if granted 25 s earlier)
    # and another worker takes the job over.
    conn.execute("UPDATE jobs SET locked_until = %s WHERE id = %s",
                 [T0 + timedelta(seconds=5), ids[1]])
    db.set_clock(conn, T0 + timedelta(seconds=6))
    taken = jobs.claim(conn, lease=30, worker="other")
    assert (taken.job_id, taken.attempt) == (ids[1], 2)
    h.db_at = 10  # the worker's own connection is still inside the other two leases
    db.set_clock(h.conns[-1], T0 + timedelta(seconds=10))
    h.clock.advance(BATCH_WAIT)
    flushed = h.turn()
    assert (flushed["finished"], flushed["rejected"], flushed["batches"]) == (2, 1, 1)
    assert states(conn, ids) == ["done", "running", "done"]
    first = [row for row in jobs.history(conn, ids[1]) if row["attempt"] == 1]
    assert [(r["outcome"], r["rejected_report"]) for r in first] == [("expired", "finish")]
    assert jobs.finish(conn, taken, "the new attempt's result"), "the new holder still may"


def test_a_flush_whose_answer_was_lost_is_sent_again_and_not_counted_as_refused(
        conn, harness, monkeypatch):
    ids = submit(conn, 3)
    h = harness({"noop": lambda payload: None}, concurrency=3)
    h.turns_until(lambda t: h.worker.batched == 3)
    real = jobs.finish_many

    def committed_then_cut(connection, results):
        real(connection, results)  # the rows commit, then the answer is lost with the connection
        monkeypatch.setattr(jobs, "finish_many", real)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(jobs, "finish_many", committed_then_cut)
    h.clock.advance(BATCH_WAIT)
    cut = h.turn()
    assert cut["disconnects"] == 1 and cut["finished"] == 0
    assert states(conn, ids) == ["done"] * 3
    h.clock.advance(10)  # past the reconnect backoff
    again = h.turn()
    assert (again["finished"], again["rejected"]) == (3, 0)
    assert h.worker.stats["rejected"] == 0


def test_an_older_attempt_of_a_job_in_the_batch_is_flushed_before_the_newer_joins(
        conn, harness):
    db.set_clock(conn, T0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    release = {1: threading.Event(), 2: threading.Event()}
    h = harness({"noop": lambda payload, ctx: release[ctx.claim.attempt].wait(WAIT) and
                 ctx.claim.attempt}, concurrency=2, lease=30, heartbeat=0)
    assert h.turn()["claimed"] == 1
    # Its lease expires on the worker's own database clock; the worker takes the job over.
    h.db_at = 31
    db.set_clock(h.conns[-1], T0 + timedelta(seconds=31))
    h.clock.advance(h.worker._poll)
    assert h.turn()["claimed"] == 1
    release[1].set()
    h.turns_until(lambda t: h.worker.batched == 1)
    release[2].set()
    total = h.turns_until(lambda t: t["rejected"] == 1)  # attempt 1 flushed first, refused
    h.clock.advance(BATCH_WAIT)
    total += h.turn()
    assert (total["finished"], total["rejected"]) == (1, 1)
    assert jobs.status(conn, tenant_id=1, job_id=job_id).output == 2


def test_stop_flushes_the_batch_and_the_loop_is_finished(conn, harness):
    ids = submit(conn, 2)
    h = harness({"noop": lambda payload: None}, concurrency=2)
    h.turns_until(lambda t: h.worker.batched == 2)
    assert not h.worker.finished
    h.worker.stop()
    turn = h.turn()
    assert (turn["finished"], turn["claimed"]) == (2, 0) and h.worker.finished
    assert states(conn, ids) == ["done"] * 2


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"batch": 0}, ValueError), ({"batch": 2.5}, TypeError), ({"batch_wait": -1}, ValueError),
    ({"batch_wait": 20, "lease": 30}, ValueError), ({"clock": 3}, TypeError),
])
def test_bad_batch_settings_are_refused(schema, kwargs, error):
    with pytest.raises(error):
        Worker(lambda: db.connect(schema), {"noop": print}, **kwargs)


def test_a_crash_before_the_flush_loses_only_the_acknowledgements(conn, harness):
    ids = submit(conn, 3)
    ran = []
    h = harness({"noop": lambda payload: ran.append(payload["n"])}, concurrency=3, lease=30)
    h.turns_until(lambda t: h.worker.batched == 3)
    h.worker.abandon()  # a SIGKILL between the handlers' return and the flush
    assert sorted(ran) == [0, 1, 2] and states(conn, ids) == ["running"] * 3
    assert conn.execute("SELECT count(*) FROM job_results").fetchone()[0] == 0
    db.set_clock(conn, T0 + timedelta(seconds=31))  # the leases run out: the jobs come back
    again = jobs.claim_many(conn, 3, lease=30, worker="next")
    assert sorted((c.job_id, c.attempt) for c in again) == [(i, 2) for i in ids]
    assert [r["outcome"] for r in jobs.history(conn, ids[0])] == ["expired", None]


def test_a_result_whose_lease_may_run_out_before_the_flush_is_reported_alone_at_once(
        conn, harness):
    ids = submit(conn, 2)
    gate = threading.Event()
    h = harness({"noop": lambda payload: gate.wait(WAIT) and payload["n"]}, concurrency=2,
                lease=30, heartbeat=0)
    assert h.turn()["claimed"] == 2
    h.clock.advance(30 - BATCH_WAIT / 2)  # unrenewed, the leases end within one batch_wait
    gate.set()
    total = h.turns_until(lambda t: t["finished"] == 2)
    assert total["batches"] == 0, "each was finished alone, before the next claim"
    assert states(conn, ids) == ["done"] * 2


def test_heartbeats_keep_a_job_three_times_longer_than_its_lease(conn, harness):
    [job_id] = submit(conn, 1)
    release = threading.Event()
    h = harness({"noop": lambda payload: release.wait(WAIT) and "slow but held"}, lease=1.0)
    assert h.turn()["claimed"] == 1
    for _ in range(8):  # 0.5 s a step on both clocks: 4 s, four leases' worth
        h.elapse(0.5)
        turn = h.turn()  # a heartbeat (every lease / 3) is due at every step
        assert (turn["statements"], turn["lost"]) == (1, 0), "one heartbeat, and it renewed"
    assert states(conn, [job_id]) == ["running"]
    release.set()
    h.turns_until(lambda t: h.worker.batched == 1)
    h.elapse(BATCH_WAIT)
    assert h.turn()["finished"] == 1
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.output) == ("done", 1, "slow but held")
    [row] = jobs.history(conn, job_id)
    assert row["outcome"] == "done"
    assert row["finished_at"] - row["started_at"] >= timedelta(seconds=3), "three leases long"
    assert h.worker.stats["lost"] == 0


def test_without_heartbeats_the_lease_runs_out_and_the_late_finish_is_refused(conn, harness):
    [job_id] = submit(conn, 1, max_attempts=1)
    release = threading.Event()
    h = harness({"noop": lambda payload: release.wait(WAIT) and "too late"}, lease=0.3,
                heartbeat=0)
    assert h.turn()["claimed"] == 1
    h.elapse(1.0)  # longer than the lease, and nobody renews it
    release.set()
    total = h.turns_until(lambda t: t["rejected"] == 1)  # then its claim fails the expired
    h.elapse(h.worker._poll)                               # last attempt, or the next poll's
    total += h.turn()
    assert (total["rejected"], total["finished"], total["lost"]) == (1, 0, 0)
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert st.state == "failed"
    assert st.last_error == "lease expired on the last attempt (1 of 1)"
    [row] = jobs.history(conn, job_id)
    assert (row["outcome"], row["rejected_report"]) == ("expired", "finish")
    assert conn.execute("SELECT count(*) FROM job_results").fetchone()[0] == 0


def test_a_listening_worker_is_woken_by_a_notification_on_its_own_connection(harness, conn):
    # No poll comes due on the manual clock: only the notification can lead to the claim.
    h = harness({"noop": lambda payload: None}, listen=True, poll=60)
    db.set_clock(conn, T0)  # the jobs are due on the worker's database clock
    assert h.turn()["claimed"] == 0  # connects, LISTENs, finds nothing
    assert h.worker.listener_statements == 2 and h.turn()["statements"] == 0
    assert not h.worker.wait(0.2), "nothing to wake it"
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    assert h.worker.wait(WAIT), "the notification makes the connection's socket readable"
    assert h.turn()["claimed"] == 1
    # One that arrives while the connection runs a statement is heard by the next turn,
    # whether psycopg kept it with that statement's answer or it still waits in the socket.
    h.worker.wait(WAIT)
    h.turn()  # reports the first job (batched)
    second = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    h.conns[0].execute("SELECT pg_sleep(0.2)")  # the notification arrives meanwhile
    assert h.turn()["claimed"] == 1, "heard without a wait and without a poll"
    assert {row["job_id"] for row in jobs.history(conn)} == {job_id, second}
