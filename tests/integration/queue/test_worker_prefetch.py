"""The throughput mode (`Worker(prefetch=N)`), turn by turn against real PostgreSQL: one
claim fills the slots and the local queue; the waiting jobs' leases are renewed; a stop
hands the jobs still waiting locally back at once; a worker paused past its lease neither
starts a job someone else took over nor completes it (its late report is refused for that
row, and the other rows of its batch commit). Manual clocks, as in test_worker_turns."""

import dataclasses
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from frozen import T0
from turns import WAIT

from cachequeue import db
from cachequeue.errors import ForeignClaim
from cachequeue.queue import jobs, prefetch
from cachequeue.queue.worker import BATCH_WAIT


def submit(conn, n, **kw):
    db.set_clock(conn, T0)
    return [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": k}, **kw) for k in range(n)]


def states(conn, ids):
    return [jobs.status(conn, tenant_id=1, job_id=i).state for i in ids]


class Blocking:
    """A handler that records what it ran and waits for `gate` (one run at a time)."""

    def __init__(self):
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.ran: list[int] = []

    def __call__(self, payload):
        self.ran.append(payload["n"])
        self.started.release()
        self.gate.wait(WAIT)
        return payload["n"]

    def wait_started(self):
        assert self.started.acquire(timeout=WAIT)


def test_one_claim_fills_the_slots_and_the_local_queue_and_all_are_done(conn, harness):
    ids = submit(conn, 30)
    h = harness({"noop": lambda payload: payload["n"]}, concurrency=2, prefetch=20, batch=1000)
    first = h.turn()
    assert (first["claimed"], first["statements"]) == (22, 4), \
        "register, install, a heartbeat (none held yet) and ONE claim"
    total = first + h.turns_until(lambda t: t["claimed"] == 8)  # refilled at half: the rest
    total += h.turns_until(lambda t: h.worker.batched == 30)
    h.clock.advance(BATCH_WAIT)
    sent = h.turn()  # the due batch goes to the sender's own connection
    assert (sent["finished"], h.worker.batched) == (0, 0)
    total += sent + h.turns_until(lambda t: t["finished"] == 30)  # logged once answered
    assert (total["claimed"], total["finished"], total["batches"]) == (30, 30, 1)
    assert states(conn, ids) == ["done"] * 30
    outputs = conn.execute("SELECT output FROM job_results ORDER BY job_id").fetchall()
    assert [o[0] for o in outputs] == list(range(30))


def test_a_stop_hands_back_the_jobs_waiting_locally_at_once(conn, harness):
    ids = submit(conn, 6)
    handler = Blocking()
    h = harness({"noop": handler}, concurrency=1, prefetch=5, shutdown_timeout=30)
    assert h.turn()["claimed"] == 6
    handler.wait_started()  # job 0 runs; 1..5 wait in the local queue
    h.worker.stop()
    turn = h.turn()  # no clock moved: at once, not at lease expiry or the shutdown timeout
    assert (turn["released"], turn["statements"]) == (5, 1), "one statement for the five"
    assert states(conn, ids) == ["running"] + ["pending"] * 5
    for job_id in ids[1:]:
        [row] = jobs.history(conn, job_id)
        assert row["outcome"] == "released" and "local queue" in row["error"]
        st = jobs.status(conn, tenant_id=1, job_id=job_id)
        assert (st.attempts, st.handbacks) == (1, 1), "a hand-back does not use an attempt"
    assert not h.worker.finished, "the running job still has its shutdown timeout"
    handler.gate.set()
    h.turns_until(lambda t: t["finished"] == 1)
    assert h.worker.finished and handler.ran == [0]
    assert states(conn, ids) == ["done"] + ["pending"] * 5
    other = jobs.claim_many(conn, 10, worker="other")
    assert sorted(c.job_id for c in other) == ids[1:], "claimable by others at once"


def test_the_leases_of_the_jobs_waiting_locally_are_renewed(conn, harness):
    ids = submit(conn, 3)
    handler = Blocking()
    h = harness({"noop": handler}, concurrency=1, prefetch=2, lease=1.0)
    assert h.turn()["claimed"] == 3
    handler.wait_started()
    for _ in range(8):  # four leases' worth, a heartbeat at every step
        h.elapse(0.5)
        turn = h.turn()
        assert (turn["statements"], turn["lost"]) == (1, 0), "one heartbeat renewed all three"
    assert states(conn, ids) == ["running"] * 3
    until = conn.execute("SELECT locked_until FROM jobs ORDER BY id").fetchall()
    assert all(u[0] > T0 + timedelta(seconds=4) for u in until)
    handler.gate.set()
    h.turns_until(lambda t: h.worker.batched == 3)
    h.elapse(BATCH_WAIT)
    assert h.turns_until(lambda t: t["finished"] == 3)["finished"] == 3
    assert handler.ran == [0, 1, 2]


def test_a_paused_worker_does_not_start_or_finish_a_job_taken_over_meanwhile(conn, harness):
    ids = submit(conn, 3)
    handler = Blocking()
    h = harness({"noop": handler}, concurrency=1, prefetch=5, lease=30)
    assert h.turn()["claimed"] == 3
    handler.wait_started()  # job 0 runs; jobs 1 and 2 wait locally
    # The worker is paused (no turn, no heartbeat) past its leases, and another worker
    # takes the three jobs over (the running one and the two waiting locally).
    db.set_clock(conn, T0 + timedelta(seconds=31))
    taken = jobs.claim_many(conn, 3, lease=30, worker="other")
    assert [(c.job_id, c.attempt) for c in taken] == [(i, 2) for i in ids]
    # The worker wakes up: its heartbeat finds the three leases lost.
    h.elapse(31)
    turn = h.turn()
    assert (turn["lost"], turn["claimed"]) == (3, 0)
    handler.gate.set()
    total = h.turns_until(lambda t: t["rejected"] == 3)
    assert (total["finished"], total["released"], total["failed"]) == (0, 0, 0)
    assert handler.ran == [0], "the jobs that waited past their leases were never started"
    firsts = [[(r["outcome"], r["rejected_report"]) for r in jobs.history(conn, job_id)
               if r["attempt"] == 1] for job_id in ids]
    # Job 0 ran and its finish was refused; jobs 1 and 2 were not started: the worker
    # tried to hand them back (a hand-back, not a failure), and was refused.
    assert firsts == [[("expired", "finish")], [("expired", None)], [("expired", None)]]
    assert states(conn, ids) == ["running"] * 3
    for c in taken:
        assert jobs.finish(conn, c, "the new holder's"), "the new holders still may"


def test_a_late_batch_is_refused_for_the_row_taken_over_and_commits_the_others(conn, harness):
    ids = submit(conn, 3)
    h = harness({"noop": lambda payload: payload["n"]}, concurrency=1, prefetch=5, lease=30,
                batch=1000)
    h.turns_until(lambda t: h.worker.batched == 3)
    # While the results wait, the second job's lease runs out and another worker takes it.
    conn.execute("UPDATE jobs SET locked_until = %s WHERE id = %s",
                 [T0 + timedelta(seconds=5), ids[1]])
    db.set_clock(conn, T0 + timedelta(seconds=6))
    taken = jobs.claim(conn, lease=30, worker="other")
    assert (taken.job_id, taken.attempt) == (ids[1], 2)
    h.db_at = 10
    db.set_clock(h.conns[-1], T0 + timedelta(seconds=10))
    h.clock.advance(BATCH_WAIT)
    flushed = h.turns_until(lambda t: t["finished"] + t["rejected"] == 3)
    assert (flushed["finished"], flushed["rejected"], flushed["batches"]) == (2, 1, 1)
    assert states(conn, ids) == ["done", "running", "done"]
    first = [row for row in jobs.history(conn, ids[1]) if row["attempt"] == 1]
    assert [(r["outcome"], r["rejected_report"]) for r in first] == [("expired", "finish")]
    assert jobs.finish(conn, taken, "the new attempt's result")
    assert jobs.status(conn, tenant_id=1, job_id=ids[1]).output == "the new attempt's result"


def test_release_many_moves_only_the_rows_whose_lease_the_attempt_holds(conn, schema):
    ids = submit(conn, 3)
    held = jobs.claim_many(conn, 3, lease=30, worker="w")
    conn.execute("UPDATE jobs SET locked_until = %s WHERE id = %s",
                 [T0 + timedelta(seconds=5), ids[2]])
    db.set_clock(conn, T0 + timedelta(seconds=6))  # job 2's lease ran out
    stolen = jobs.claim(conn, lease=30, worker="other")
    assert stolen.job_id == ids[2]
    moved = prefetch.release_many(conn, held, "stopping")
    assert moved == {held[0].lease_token: "pending", held[1].lease_token: "pending"}
    assert states(conn, ids) == ["pending", "pending", "running"]
    assert jobs.status(conn, tenant_id=1, job_id=ids[2]).attempts == 2
    assert prefetch.release_many(conn, [], "x") == {}
    with pytest.raises(ValueError, match="once"):
        prefetch.release_many(conn, [stolen, stolen], "x")
    with pytest.raises(TypeError):
        prefetch.release_many(conn, [object()], "x")
    with pytest.raises(ForeignClaim):  # made in another schema: nothing written
        prefetch.release_many(conn, [dataclasses.replace(stolen, schema="elsewhere")], "x")
    assert states(conn, [ids[2]]) == ["running"]


def test_a_batch_the_sender_could_not_send_is_sent_on_the_loop_connection(conn, harness):
    ids = submit(conn, 4)
    h = harness({"noop": lambda payload: payload["n"]}, concurrency=2, prefetch=4)
    loop_connect = h.worker._connect
    h.turn()  # the loop's connection is open; every connection after it is refused
    h.worker._in_flight._sender._connect = lambda: (_ for _ in ()).throw(
        psycopg.OperationalError("refused (test)"))
    h.turns_until(lambda t: h.worker.batched == 4)
    h.clock.advance(BATCH_WAIT)
    total = h.turns_until(lambda t: t["finished"] == 4)
    assert (total["rejected"], total["disconnects"]) == (0, 1)
    assert states(conn, ids) == ["done"] * 4
    assert h.worker._connect is loop_connect


def test_a_batch_whose_answer_was_lost_is_sent_again_and_counted_finished(
        conn, harness, monkeypatch):
    ids = submit(conn, 3)
    real = jobs.finish_many

    def commit_then_lose_the_answer(c, results):
        answer = real(c, results)
        if threading.current_thread().name == "cachequeue-completions":
            raise psycopg.OperationalError("the answer was lost (test)")
        return answer

    monkeypatch.setattr(jobs, "finish_many", commit_then_lose_the_answer)
    h = harness({"noop": lambda payload: payload["n"]}, concurrency=1, prefetch=3)
    h.turns_until(lambda t: h.worker.batched == 3)
    h.clock.advance(BATCH_WAIT)
    total = h.turns_until(lambda t: t["finished"] + t["rejected"] == 3)
    assert (total["finished"], total["rejected"], total["disconnects"]) == (3, 0, 1)
    assert states(conn, ids) == ["done"] * 3
    for job_id in ids:  # sent twice, committed once: no refusal noted on the attempt
        [row] = jobs.history(conn, job_id)
        assert (row["outcome"], row["rejected_report"]) == ("done", None)


def near_the_cap(conn, job_id):
    """A pending job handed back MAX_HANDBACKS - 1 times already: the next hand-back is the last."""
    conn.execute("UPDATE jobs SET attempts = %(n)s, handbacks = %(n)s WHERE id = %(id)s",
                 {"n": jobs.MAX_HANDBACKS - 1, "id": job_id})


def test_the_local_queue_handed_back_on_stop_counts_toward_the_hand_back_cap(conn, harness):
    """release_many counts each hand-back as jobs.release does: the one that reaches
    MAX_HANDBACKS fails the job, saying why; the others go back to pending."""
    ids = submit(conn, 3)
    near_the_cap(conn, ids[1])
    handler = Blocking()
    h = harness({"noop": handler}, concurrency=1, prefetch=5, shutdown_timeout=30)
    assert h.turn()["claimed"] == 3
    handler.wait_started()  # job 0 runs; 1 and 2 wait locally
    h.worker.stop()
    assert h.turn()["released"] == 2
    assert states(conn, ids) == ["running", "failed", "pending"]
    capped = jobs.status(conn, tenant_id=1, job_id=ids[1])
    assert (capped.handbacks, capped.attempts) == (jobs.MAX_HANDBACKS, jobs.MAX_HANDBACKS)
    assert capped.last_error.startswith(f"handed back {jobs.MAX_HANDBACKS} times, the most allowed")
    assert "local queue" in capped.last_error
    assert jobs.status(conn, tenant_id=1, job_id=ids[2]).handbacks == 1
    handler.gate.set()
    h.turns_until(lambda t: t["finished"] == 1)


def test_release_many_and_release_agree_at_the_cap(conn):
    """Two copies of the same jobs, one handed back job by job (jobs.release), one in one
    statement (prefetch.release_many): the same states, hand-back counts and last errors."""
    ids = submit(conn, 4)
    for job_id in ids[1::2]:  # two just below the cap, two far from it
        near_the_cap(conn, job_id)
    held = jobs.claim_many(conn, 4, lease=30, worker="w")
    one_by_one = [jobs.release(conn, c, "stop") for c in held[:2]]
    together = prefetch.release_many(conn, held[2:], "stop")
    assert one_by_one == ["pending", "failed"]
    assert [together[c.lease_token] for c in held[2:]] == ["pending", "failed"]
    rows = [jobs.status(conn, tenant_id=1, job_id=i) for i in ids]
    assert [(r.state, r.handbacks, r.last_error) for r in rows[:2]] == \
        [(r.state, r.handbacks, r.last_error) for r in rows[2:]]


def test_a_job_whose_lease_ran_out_while_it_waited_is_handed_back_not_failed(conn, harness):
    """By the worker's clock the waiting jobs' leases ran out; the database still holds
    them: they are handed back (pending at once, no attempt used, no backoff), and the hand
    back is counted toward the cap: a job at MAX_HANDBACKS - 1 fails, saying why."""
    ids = submit(conn, 3, max_attempts=1)
    near_the_cap(conn, ids[2])
    handler = Blocking()
    h = harness({"noop": handler}, concurrency=1, prefetch=5, lease=30)
    assert h.turn()["claimed"] == 3
    handler.wait_started()
    h.clock.advance(31)  # the worker's clock only: the database's leases still run
    handler.gate.set()
    flight = h.worker._in_flight
    deadline = time.monotonic() + WAIT
    while len(flight._results) < 3:  # job 0's result, then 1 and 2 not started
        assert time.monotonic() < deadline
        h.worker.wait(0.1)
    total = h.turn()
    assert (total["released"], total["failed"], total["rejected"]) == (2, 0, 0)
    assert handler.ran == [0]
    # Pending at once (no backoff): the same turn's claim took job 1 again, attempt 2,
    # and its attempt budget (max_attempts=1) is untouched: the hand-back is not counted.
    assert total["claimed"] == 1
    assert states(conn, ids) == ["done", "running", "failed"]
    waited = jobs.status(conn, tenant_id=1, job_id=ids[1])
    assert (waited.attempts, waited.handbacks, waited.max_attempts) == (2, 1, 1)
    assert [r["outcome"] for r in jobs.history(conn, ids[1])] == ["released", None]
    capped = jobs.status(conn, tenant_id=1, job_id=ids[2])
    assert capped.handbacks == jobs.MAX_HANDBACKS and "local queue" in capped.last_error


@pytest.mark.parametrize("prefetch", [0, 8])
def test_no_completion_statement_writes_more_than_batch_rows(conn, harness, prefetch,
                                                             monkeypatch):
    """Results that arrive together (several handler threads, a turn that found many)
    never make a statement larger than `batch`: a full batch goes out at once."""
    ids = submit(conn, 23)
    real, sizes = jobs.finish_many, []

    def counted(c, results):
        results = list(results)
        sizes.append(len(results))
        return real(c, results)

    monkeypatch.setattr(jobs, "finish_many", counted)
    h = harness({"noop": lambda payload: payload["n"]}, concurrency=4, prefetch=prefetch,
                batch=5)

    def drained(total):
        h.clock.advance(BATCH_WAIT)  # every turn may flush what waits
        return total["finished"] == 23

    h.turns_until(drained)
    assert states(conn, ids) == ["done"] * 23
    assert sum(sizes) == 23 and max(sizes) <= 5, sizes


def test_the_loop_goes_on_while_the_sender_is_busy(conn, harness, monkeypatch):
    """A full batch waiting behind the one in flight does not block the loop's turn (it
    used to wait for the sender's answer, and claimed nothing meanwhile); the results wait
    in their queue, the loop's wait does not spin, and the answer lets everything finish."""
    ids = submit(conn, 8)
    gate, real = threading.Event(), jobs.finish_many

    def slow_sender(c, results):
        if threading.current_thread().name == "cachequeue-completions":
            gate.wait(WAIT)
        return real(c, results)

    monkeypatch.setattr(jobs, "finish_many", slow_sender)
    h = harness({"noop": lambda payload: payload["n"]}, concurrency=2, prefetch=6, batch=2)
    flight = h.worker._in_flight
    try:
        deadline = time.monotonic() + WAIT
        while not (flight._held_back() and len(flight._results) == 8 - 2 - 2):
            assert time.monotonic() < deadline, (flight._batch, len(flight._results))
            h.worker.wait(0.1)
            started = time.monotonic()
            h.turn()
            assert time.monotonic() - started < WAIT / 3, "the turn waited for the sender"
        # 2 in flight, 2 in the full batch, 4 results waiting: no report to take, no due
        # batch, so the loop's wait sleeps instead of returning at once.
        assert not flight.reports_waiting and flight.flush_due_at() is None
    finally:
        gate.set()
    total = h.turns_until(lambda t: t["finished"] == 8)
    assert total["rejected"] == 0 and states(conn, ids) == ["done"] * 8
