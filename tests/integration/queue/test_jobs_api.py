"""cachequeue.jobs on real PostgreSQL: submit, validation, status, cancel, manual retry."""

import dataclasses
import math
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from cachequeue import db
from cachequeue.course import chapter
from cachequeue.errors import ForeignClaim, InvalidJob, PayloadTooLarge, UnknownKind
from cachequeue.queue import jobs
from cachequeue.queue.retry import RetryPolicy

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def snapshot(conn):
    """Everything the queue stores, as one comparable value: 'changes nothing' means equal."""
    return conn.execute(
        "SELECT (SELECT coalesce(string_agg(j::text, ';' ORDER BY id), '') FROM jobs j),"
        " (SELECT coalesce(string_agg(a::text, ';' ORDER BY job_id, attempt), '')"
        "  FROM job_attempts a),"
        " (SELECT count(*) FROM job_results), (SELECT count(*) FROM job_audit)"
    ).fetchone()


def test_submit_persists_a_pending_job_before_returning_its_id(conn, schema):
    job_id = jobs.submit(conn, tenant_id=1, kind="summarise", payload={"document_id": 3})
    with db.connect(schema) as other:  # another session sees it: it was committed
        row = other.execute("SELECT state::text, kind, payload, attempts FROM jobs WHERE id = %s",
                            [job_id]).fetchone()
    assert row == ("pending", "summarise", {"document_id": 3}, 0)
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.max_attempts, st.output, st.finished_at) == (
        "pending", 0, 3, None, None)


def test_status_reports_the_result_once_done(conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn)
    assert jobs.status(conn, tenant_id=1, job_id=job_id).state == "running"
    assert jobs.finish(conn, claim, {"summary": "ok"})
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.output, st.attempts) == ("done", {"summary": "ok"}, 1)
    assert st.finished_at is not None


def test_another_tenants_job_is_indistinguishable_from_a_missing_one(conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    missing = job_id + 1000
    assert jobs.status(conn, tenant_id=2, job_id=job_id) is None
    assert jobs.status(conn, tenant_id=2, job_id=missing) is None
    before = snapshot(conn)
    for target in (job_id, missing):
        assert jobs.cancel(conn, tenant_id=2, job_id=target, actor="eve", reason="x") is False
        assert jobs.retry(conn, tenant_id=2, job_id=target, actor="eve", reason="x") is False
    assert snapshot(conn) == before
    assert jobs.status(conn, tenant_id=1, job_id=job_id).state == "pending"


def test_idempotency_key_returns_the_first_job_per_tenant(conn):
    first = jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": 1}, idempotency_key="k1")
    again = jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": 2}, idempotency_key="k1")
    other_tenant = jobs.submit(conn, tenant_id=2, kind="noop", payload={}, idempotency_key="k1")
    assert again == first and other_tenant != first
    assert conn.execute("SELECT payload FROM jobs WHERE id = %s", [first]).fetchone()[0] == {"n": 1}
    assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 2


def test_idempotent_submit_under_concurrency_creates_one_job(schema):
    threads_n = 8
    barrier = threading.Barrier(threads_n)
    ids, errors = [], []

    def submit_same_key():
        try:
            with db.connect(schema) as conn:
                barrier.wait(timeout=10)
                ids.append(jobs.submit(conn, tenant_id=7, kind="noop", payload={},
                                       idempotency_key="order-42"))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=submit_same_key) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert len(ids) == threads_n and len(set(ids)) == 1
    with db.connect(schema) as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 1


def _too_big():
    return {"text": "x" * jobs.MAX_PAYLOAD_BYTES}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"payload": {"when": datetime.now()}}, InvalidJob, "JSON-serialisable"),
    ({"payload": {"x": {1, 2}}}, InvalidJob, "JSON-serialisable"),
    ({"payload": {"x": math.nan}}, InvalidJob, "JSON-serialisable"),
    ({"payload": {"x": (1, 2)}}, InvalidJob, "round trip"),
    ({"payload": {1: "a"}}, InvalidJob, "round trip"),
    ({"payload": [1, 2]}, InvalidJob, "dict"),
    ({"payload": {"x": "a\u0000b"}}, InvalidJob, "jsonb"),
    ({"payload": _too_big()}, PayloadTooLarge, "limit"),
    ({"kind": "launch_rockets"}, UnknownKind, "launch_rockets"),
    ({"kind": ""}, ValueError, "kind"),
    ({"max_attempts": 0}, ValueError, "max_attempts"),
    ({"max_attempts": True}, TypeError, "max_attempts"),
    ({"max_attempts": "3"}, TypeError, "max_attempts"),
    ({"tenant_id": "1"}, TypeError, "tenant_id"),
    ({"idempotency_key": ""}, ValueError, "idempotency_key"),
    ({"run_after": datetime(2026, 1, 1)}, ValueError, "timezone"),
    ({"run_after": -1}, ValueError, "run_after"),
    ({"deadline": 0}, ValueError, "deadline"),
    ({"deadline": math.inf}, ValueError, "deadline"),
])
def test_bad_submit_gets_a_clear_error_and_changes_nothing(conn, kwargs, error, match):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={}, idempotency_key="k")
    before = snapshot(conn)
    args = {"tenant_id": 1, "kind": "noop", "payload": {}} | kwargs
    with pytest.raises(error, match=match):
        jobs.submit(conn, **args)
    assert snapshot(conn) == before


def test_unknown_kind_is_refused_even_with_a_used_idempotency_key(conn):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={}, idempotency_key="k")
    with pytest.raises(UnknownKind):
        jobs.submit(conn, tenant_id=1, kind="nope", payload={}, idempotency_key="k")


def test_payload_limit_is_measured_on_the_json_text(conn):
    overhead = len('{"t":""}')
    fits = {"t": "x" * (jobs.MAX_PAYLOAD_BYTES - overhead)}
    jobs.submit(conn, tenant_id=1, kind="noop", payload=fits)
    with pytest.raises(PayloadTooLarge):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"t": fits["t"] + "x"})
    # Multi-byte characters count in UTF-8 bytes: 3 bytes each for these.
    with pytest.raises(PayloadTooLarge):
        jobs.submit(conn, tenant_id=1, kind="noop",
                    payload={"t": "摘" * (jobs.MAX_PAYLOAD_BYTES // 3)})


@pytest.mark.parametrize("lease, error", [(0, ValueError), (-5, ValueError), (math.nan, ValueError),
                                          (math.inf, ValueError), (True, TypeError),
                                          ("30", TypeError), (jobs.MAX_LEASE + 1, ValueError)])
def test_bad_lease_is_refused_and_claims_nothing(conn, lease, error):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    before = snapshot(conn)
    with pytest.raises(error, match="lease"):
        jobs.claim(conn, lease=lease)
    assert snapshot(conn) == before
    claim = jobs.claim(conn, lease=30)
    before = snapshot(conn)
    with pytest.raises(error, match="lease"):
        jobs.heartbeat(conn, claim, lease)
    assert snapshot(conn) == before


@pytest.mark.parametrize("kwargs, error", [({"kinds": "noop"}, TypeError), ({"kinds": []}, ValueError),
                                           ({"worker": ""}, ValueError)])
def test_bad_claim_arguments_are_refused(conn, kwargs, error):
    with pytest.raises(error):
        jobs.claim(conn, **kwargs)
    with pytest.raises(ValueError, match="limit"):
        jobs.claim_many(conn, 0)


def test_claim_only_takes_the_kinds_asked_for(conn):
    noop = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    flaky = jobs.submit(conn, tenant_id=1, kind="flaky", payload={})
    assert jobs.claim(conn, kinds=["flaky"]).job_id == flaky
    assert jobs.claim(conn, kinds=["flaky"]) is None
    assert jobs.claim(conn, kinds=("noop", "flaky")).job_id == noop


def test_a_forged_token_is_rejected_and_writes_nothing(conn):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn)
    forged = dataclasses.replace(claim, lease_token=uuid.uuid4())
    before = snapshot(conn)
    assert jobs.finish(conn, forged, {"x": 1}) is False
    assert jobs.fail(conn, forged, "boom") is None
    assert jobs.heartbeat(conn, forged) is False
    assert snapshot(conn) == before
    with pytest.raises(TypeError, match="uuid.UUID"):
        jobs.finish(conn, dataclasses.replace(claim, lease_token=str(claim.lease_token)), {})
    with pytest.raises(TypeError, match="Claim"):
        jobs.finish(conn, {"job_id": claim.job_id}, {})
    assert jobs.finish(conn, claim, {"x": 1}) is True


def test_a_claim_used_on_another_schema_raises_and_writes_nothing(conn, schema):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn)
    assert claim.schema == schema
    other_name = schema + "_b"
    with db.connect() as admin:
        chapter.reset(admin, other_name)
    try:
        with db.connect(other_name) as other:
            jobs.submit(other, tenant_id=1, kind="noop", payload={})
            jobs.claim(other)  # a running job with the same id lives there
            before = snapshot(other)
            for call in (lambda: jobs.finish(other, claim, {}), lambda: jobs.fail(other, claim, "x"),
                         lambda: jobs.heartbeat(other, claim)):
                with pytest.raises(ForeignClaim, match=schema):
                    call()
            assert snapshot(other) == before
    finally:
        with db.connect() as admin:
            db.drop_schema(admin, other_name)
    assert jobs.finish(conn, claim, {}) is True


def test_bad_output_is_refused_and_the_lease_is_kept(conn):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn)
    before = snapshot(conn)
    with pytest.raises(InvalidJob):
        jobs.finish(conn, claim, {"at": object()})
    with pytest.raises(PayloadTooLarge):
        jobs.finish(conn, claim, "x" * jobs.MAX_PAYLOAD_BYTES)
    with pytest.raises(TypeError, match="error"):
        jobs.fail(conn, claim, 42)
    assert snapshot(conn) == before
    assert jobs.finish(conn, claim, None) is True  # JSON null is a valid result
    assert jobs.status(conn, tenant_id=1, job_id=claim.job_id).state == "done"


def test_cancel_then_a_late_finish_is_rejected(conn):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    claim = jobs.claim(conn, worker="w1")
    assert jobs.cancel(conn, tenant_id=1, job_id=job_id, actor="alice", reason="user gave up")
    assert jobs.finish(conn, claim, {"late": True}) is False
    assert jobs.fail(conn, claim, "late") is None
    assert jobs.cancel(conn, tenant_id=1, job_id=job_id, actor="alice", reason="again") is False
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.output) == ("cancelled", None)
    assert conn.execute("SELECT count(*) FROM job_results").fetchone()[0] == 0
    [attempt] = jobs.history(conn, job_id)
    assert (attempt["outcome"], attempt["error"]) == ("cancelled", "user gave up")
    [row] = jobs.audit(conn, job_id)
    assert (row["actor"], row["action"], row["reason"]) == ("alice", "cancel", "user gave up")
    assert row["detail"] == {"previous_state": "running", "attempts": 1}
    # A cancelled job is never claimed again.
    assert jobs.claim(conn) is None


@pytest.mark.parametrize("actor, reason, error", [
    ("", "why", ValueError), ("ops", " ", ValueError), (None, "why", TypeError)])
def test_cancel_and_retry_need_an_actor_and_a_reason(conn, actor, reason, error):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    before = snapshot(conn)
    with pytest.raises(error):
        jobs.cancel(conn, tenant_id=1, job_id=job_id, actor=actor, reason=reason)
    with pytest.raises(error):
        jobs.retry(conn, tenant_id=1, job_id=job_id, actor=actor, reason=reason)
    assert snapshot(conn) == before


def test_manual_retry_is_audited_keeps_the_job_id_and_starts_new_attempts(conn):
    db.set_clock(conn, T0)
    job_id = jobs.submit(conn, tenant_id=1, kind="summarise", payload={"document_id": 1},
                         max_attempts=1)
    first = jobs.claim(conn)
    assert jobs.retry(conn, tenant_id=1, job_id=job_id, actor="ops", reason="early") is False
    assert jobs.fail(conn, first, RuntimeError("vendor down")) == "failed"
    db.set_clock(conn, T0 + timedelta(minutes=5))
    assert jobs.retry(conn, tenant_id=1, job_id=job_id, actor="ops", reason="vendor fixed")
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.max_attempts, st.run_after) == (
        "pending", 1, 2, T0 + timedelta(minutes=5))
    assert st.last_error == "RuntimeError: vendor down"  # the reason stays visible
    second = jobs.claim(conn)
    assert (second.job_id, second.attempt) == (job_id, 2)
    assert second.lease_token != first.lease_token
    assert jobs.finish(conn, second, {"summary": "ok"})
    history = jobs.history(conn, job_id)
    assert [(h["attempt"], h["outcome"]) for h in history] == [(1, "failed"), (2, "done")]
    assert len({h["lease_token"] for h in history}) == 2
    [row] = jobs.audit(conn, job_id)
    assert (row["actor"], row["action"], row["reason"], row["at"]) == (
        "ops", "retry", "vendor fixed", T0 + timedelta(minutes=5))
    assert row["detail"] == {"previous_attempts": 1, "previous_max_attempts": 1,
                             "added_attempts": 1, "last_error": "RuntimeError: vendor down"}
    # Done is final: no further manual retry.
    assert jobs.retry(conn, tenant_id=1, job_id=job_id, actor="ops", reason="again") is False


def test_each_manual_retry_grants_the_submitted_budget_again(conn):
    db.set_clock(conn, T0)
    job_id = jobs.submit(conn, tenant_id=1, kind="always_fail", payload={}, max_attempts=2)
    for expected_max in (2, 4, 6):
        for _ in range(2):
            claim = jobs.claim(conn)
            jobs.fail(conn, claim, "no", permanent=False,
                      policy=RetryPolicy(max_attempts=10, jitter=False, base=1, cap=1))
            db.set_clock(conn, T0 + timedelta(hours=1 + expected_max))
        st = jobs.status(conn, tenant_id=1, job_id=job_id)
        assert (st.state, st.attempts, st.max_attempts) == ("failed", expected_max, expected_max)
        assert jobs.retry(conn, tenant_id=1, job_id=job_id, actor="ops", reason="once more")
    assert jobs.retry(conn, tenant_id=1, job_id=job_id, actor="ops", reason="x") is False
    assert jobs.status(conn, tenant_id=1, job_id=job_id).max_attempts == 8


def test_history_lists_every_attempt_in_order(conn):
    a = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    b = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    for claim in jobs.claim_many(conn, 2, worker="w9"):
        jobs.finish(conn, claim, claim.job_id)
    rows = jobs.history(conn)
    assert [(r["job_id"], r["attempt"], r["worker"], r["outcome"]) for r in rows] == [
        (a, 1, "w9", "done"), (b, 1, "w9", "done")]
    assert all(r["finished_at"] >= r["started_at"] for r in rows)
    assert jobs.history(conn, b) == rows[1:]


def test_finish_many_finishes_each_held_lease_in_one_statement(conn):
    db.set_clock(conn, T0)
    for n in range(4):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
    first, second, third, fourth = jobs.claim_many(conn, 4, lease=30)
    assert jobs.cancel(conn, tenant_id=1, job_id=third.job_id, actor="u", reason="stop")
    forged = dataclasses.replace(second, lease_token=uuid.uuid4())
    assert jobs.finish_many(conn, []) == []
    assert jobs.finish_many(conn, [(first, "a"), (forged, "b"), (third, "c"), (fourth, None)]) == [
        True, False, False, True]
    outputs = dict(conn.execute("SELECT job_id, output FROM job_results").fetchall())
    assert outputs == {first.job_id: "a", fourth.job_id: None}
    outcomes = {h["job_id"]: h["outcome"] for h in jobs.history(conn)}
    assert outcomes == {first.job_id: "done", second.job_id: None, third.job_id: "cancelled",
                        fourth.job_id: "done"}
    assert jobs.finish(conn, second, "b") is True  # the real holder still can


def test_finish_many_refuses_bad_batches_and_writes_nothing(conn, schema):
    for n in range(2):
        jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
    a, b = jobs.claim_many(conn, 2)
    before = snapshot(conn)
    with pytest.raises(ValueError, match="once"):
        jobs.finish_many(conn, [(a, 1), (a, 2)])
    with pytest.raises(InvalidJob):
        jobs.finish_many(conn, [(a, 1), (b, {"x": object()})])
    with pytest.raises(ForeignClaim):
        jobs.finish_many(conn, [(a, 1), (dataclasses.replace(b, schema=schema + "_x"), 2)])
    with pytest.raises(ForeignClaim):
        jobs.finish_many(conn, [(dataclasses.replace(a, schema=schema + "_x"), 1)])
    assert snapshot(conn) == before
    assert jobs.finish_many(conn, [(a, 1), (b, 2)]) == [True, True]
