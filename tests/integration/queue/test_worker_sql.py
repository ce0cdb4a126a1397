"""The SQL contracts the long-running worker stands on: notifications, release, refused
reports noted on the attempt row, and the workers table. Frozen clock where time matters."""

import dataclasses
import json
import uuid
from datetime import timedelta

import psycopg
import pytest
from frozen import T0, at

from cachequeue import db
from cachequeue.errors import ForeignClaim
from cachequeue.queue import jobs, notify, registry


@pytest.fixture
def listener(schema):
    """A session LISTENing on the schema's channel."""
    with db.connect(schema) as connection:
        notify.listen(connection)
        yield connection


def received(listener):
    return [notify.event(n) for n in listener.notifies(timeout=0.2)]


def test_the_channel_is_named_after_the_schema_and_fits_63_bytes(conn, schema):
    assert notify.channel(conn) == f"cq_jobs_{schema}"
    long_name = "s" * 63
    channel = conn.execute("SELECT job_channel(%s)", [long_name]).fetchone()[0]
    assert len(channel.encode()) <= 63 and channel.startswith("cq_jobs_")
    assert channel != conn.execute("SELECT job_channel(%s)", ["s" * 62 + "t"]).fetchone()[0]


def test_an_unwatched_job_notifies_its_insert_and_nothing_a_worker_does_to_it(conn, listener):
    job_id = jobs.submit(conn, tenant_id=3, kind="noop", payload={"big": "x" * 1000})
    [raw] = list(listener.notifies(timeout=1, stop_after=1))
    assert json.loads(raw.payload) == {"job_id": job_id, "tenant_id": 3, "kind": "noop",
                                       "state": "pending", "attempts": 0}
    claim = jobs.claim(conn, lease=30)
    assert jobs.heartbeat(conn, claim)
    assert jobs.finish(conn, claim, {"ok": True})
    assert received(listener) == [], "a claim and a finish of an unwatched job: no NOTIFY"


def test_a_watched_job_notifies_every_change_of_state_or_attempts(conn, conn2, listener):
    at(conn, 0)
    job_id = jobs.submit(conn, tenant_id=3, kind="noop", payload={})
    assert notify.watch(conn, tenant_id=3, job_id=job_id) is True
    assert notify.watch(conn, tenant_id=3, job_id=job_id) is True  # again: no second notice
    claim = jobs.claim(conn, lease=30)
    assert jobs.heartbeat(conn, claim)  # only locked_until changes: no notification
    at(conn2, 31)
    taken = jobs.claim(conn2, lease=30)  # running -> running, attempts 1 -> 2
    assert jobs.finish(conn2, taken, {"ok": True})
    events = received(listener)
    assert [(e.state, e.attempts, e.watch) for e in events] == [
        ("pending", 0, False), ("pending", 0, True), ("running", 1, False),
        ("running", 2, False), ("done", 2, False)]
    assert "watch" not in repr(events[1]), "the repr shows the job, as chapter 06 prints it"


def test_watch_is_per_tenant_and_says_whether_the_job_exists(conn, listener):
    job_id = jobs.submit(conn, tenant_id=3, kind="noop", payload={})
    assert notify.watch(conn, tenant_id=4, job_id=job_id) is False
    assert notify.watch(conn, tenant_id=3, job_id=job_id + 1000) is False
    claim = jobs.claim(conn, lease=30)
    jobs.finish(conn, claim, None)
    assert [e.state for e in received(listener)] == ["pending"], "another tenant cannot watch"
    with pytest.raises(TypeError):
        notify.watch(conn, tenant_id="3", job_id=job_id)


def test_wake_ups_notify_for_every_job_watched_or_not(conn, listener):
    retried = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    handed = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    cancelled = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    received(listener)
    first, second = jobs.claim_many(conn, 2, lease=30)
    assert jobs.fail(conn, first, "vendor busy") == "pending"
    assert jobs.release(conn, second, "stopping")
    assert jobs.cancel(conn, tenant_id=1, job_id=cancelled, actor="ops", reason="test")
    assert [(e.job_id, e.state) for e in received(listener)] == [
        (retried, "pending"), (handed, "pending"), (cancelled, "cancelled")]


def test_a_takeover_of_an_unwatched_lease_is_silent_and_a_rollback_sends_nothing(conn, conn2,
                                                                               listener):
    at(conn, 0)
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    jobs.claim(conn, lease=30)
    received(listener)
    at(conn2, 31)
    assert jobs.claim(conn2, lease=30).attempt == 2
    assert received(listener) == []
    with conn.transaction():
        jobs.submit(conn, tenant_id=1, kind="noop", payload={})
        raise psycopg.Rollback()
    assert received(listener) == []


@pytest.fixture
def conn2(schema):
    with db.connect(schema) as connection:
        yield connection


def test_release_hands_the_job_back_at_once_and_gives_the_attempt_back(conn, conn2):
    at(conn, 0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1)
    claim = jobs.claim(conn, lease=30, worker="w1")
    assert jobs.release(conn, claim, "worker stopping") == "pending"
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    # Pending now (no backoff); the attempt is numbered but handed back, so it does not use
    # up the only attempt max_attempts allows: the job may run again.
    assert (st.state, st.attempts, st.handbacks, st.max_attempts, st.run_after) == \
        ("pending", 1, 1, 1, T0)
    [row] = jobs.history(conn, job_id)
    assert (row["outcome"], row["error"], row["finished_at"]) == ("released", "worker stopping", T0)
    assert jobs.finish(conn, claim, "late") is False  # the old token is refused afterwards
    again = jobs.claim(conn2, lease=30, worker="w2")
    assert (again.job_id, again.attempt) == (job_id, 2)
    assert jobs.release(conn, claim, "twice") is None  # not held: nothing changes
    assert jobs.finish(conn2, again, "ok") is True


def test_release_after_the_lease_expired_is_refused(conn):
    at(conn, 0)
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn, lease=30)
    at(conn, 30)
    assert jobs.release(conn, claim, "too late") is None
    assert conn.execute("SELECT state::text FROM jobs").fetchone()[0] == "running"
    with pytest.raises(ValueError):
        jobs.release(conn, claim, " ")


def test_a_report_after_the_lease_was_lost_is_noted_on_the_holders_attempt(conn, conn2):
    at(conn, 0)
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    old = jobs.claim(conn, lease=30, worker="paused")
    at(conn2, 31)
    new = jobs.claim(conn2, lease=30, worker="fresh")
    assert jobs.finish(conn2, new, "fresh result") is True
    at(conn, 40)
    assert jobs.finish(conn, old, "stale result") is False
    assert jobs.finish(conn, old, "stale again") is False  # noted once, at the first refusal
    first, second = jobs.history(conn, job_id)
    assert (first["outcome"], first["rejected_report"]) == ("expired", "finish")
    assert first["rejected_at"] == T0 + timedelta(seconds=40)
    assert (second["outcome"], second["rejected_report"]) == ("done", None)
    assert jobs.finish(conn2, new, "repeated") is False  # a repeated report of a done attempt
    assert jobs.history(conn, job_id)[1]["rejected_report"] is None
    forged = dataclasses.replace(new, lease_token=uuid.uuid4())
    assert jobs.fail(conn, forged, "forged") is None  # matches no attempt row: nothing noted


def test_a_refused_fail_and_finish_many_are_noted_too(conn, conn2):
    at(conn, 0)
    a = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    b = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    held_a, held_b = jobs.claim_many(conn, 2, lease=30)
    at(conn2, 31)
    jobs.claim_many(conn2, 2, lease=30)
    assert jobs.fail(conn, held_a, "late error") is None
    assert jobs.finish_many(conn, [(held_b, "late")]) == [False]
    notes = {h["job_id"]: h["rejected_report"] for h in jobs.history(conn) if h["attempt"] == 1}
    assert notes == {a: "fail", b: "finish"}


def test_the_workers_table_shows_who_holds_what_and_beat_renews_in_one_statement(conn, conn2):
    at(conn, 0)
    registry.install(conn)
    registry.install(conn)  # again: nothing changes
    registry.register(conn, "w1", pid=101, host="h")
    registry.register(conn, "w2", pid=202, host="h")
    for n in range(3):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
    c1, c2 = jobs.claim_many(conn, 2, lease=10, worker="w1")
    c3 = jobs.claim(conn, lease=10, worker="w2")
    rows = {r["name"]: r for r in registry.status(conn)}
    assert (rows["w1"]["jobs_in_hand"], rows["w1"]["job_ids"]) == (2, [c1.job_id, c2.job_id])
    assert (rows["w2"]["pid"], rows["w2"]["jobs_in_hand"]) == (202, 1)
    assert jobs.cancel(conn, tenant_id=1, job_id=c2.job_id, actor="ops", reason="no longer needed")
    at(conn, 5)
    held = registry.beat(conn, "w1", [c1, c2], lease=10)
    assert held == {c1.lease_token}, "the cancelled job is reported lost"
    locked_until = conn.execute("SELECT locked_until FROM jobs WHERE id = %s",
                                [c1.job_id]).fetchone()[0]
    assert locked_until == T0 + timedelta(seconds=15)
    at(conn2, 11)  # w2 did not renew: its lease expired and someone else takes the job
    assert jobs.claim(conn2, lease=10, worker="w3").job_id == c3.job_id
    rows = {r["name"]: r for r in registry.status(conn)}
    assert rows["w1"]["last_heartbeat"] == T0 + timedelta(seconds=5)
    assert (rows["w2"]["jobs_in_hand"], rows["w2"]["last_heartbeat"]) == (0, T0)
    registry.deregister(conn, "w1", pid=101)
    assert {r["name"]: r["stopped_at"] for r in registry.status(conn)}["w1"] == T0 + timedelta(seconds=5)
    registry.register(conn, "w1", pid=101, host="h")  # the same process again: same start
    assert {r["name"]: (r["started_at"], r["stopped_at"])
            for r in registry.status(conn)}["w1"] == (T0, None)


def test_a_fresh_schema_has_no_workers_table_until_install(conn):
    tables = "SELECT count(*) FROM pg_class WHERE relname IN ('workers', 'worker_status')" \
             " AND relnamespace = current_schema()::regnamespace"
    assert conn.execute(tables).fetchone()[0] == 0
    registry.install(conn)
    assert conn.execute(tables).fetchone()[0] == 2


def test_beat_refuses_claims_of_another_schema(conn, schema):
    registry.install(conn)
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = dataclasses.replace(jobs.claim(conn), schema=schema + "_other")
    with pytest.raises(ForeignClaim):
        registry.beat(conn, "w1", [claim], lease=30)
    with pytest.raises(ValueError):
        registry.beat(conn, "w1", [], lease=0)
