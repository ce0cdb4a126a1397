import random
import uuid
from datetime import UTC, datetime

import pytest

from cachequeue import clock as clock_module
from cachequeue.course.model.queue_model import ManualClock, ModelClaim, QueueModel
from cachequeue.errors import InvalidJob, PayloadTooLarge, UnknownKind
from cachequeue.queue.jobs import MAX_ERROR_CHARS, MAX_PAYLOAD_BYTES
from cachequeue.queue.retry import RetryPolicy


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def model(clock):
    return QueueModel(clock)


def submit(model, kind="noop", **kw):
    return model.submit(tenant_id=kw.pop("tenant_id", 1), kind=kind, payload=kw.pop("payload", {}),
                        **kw)


def test_manual_clock_is_the_clock_module_class():
    assert ManualClock is clock_module.ManualClock


def test_submit_returns_sequential_ids_and_stores_pending_jobs(model):
    assert [submit(model), submit(model)] == [1, 2]
    job = model.job(1)
    assert (job.state, job.attempts, job.max_attempts, job.run_after) == ("pending", 0, 3, 0.0)


def test_idempotency_key_is_per_tenant_and_uses_up_an_id_like_an_identity_column(model):
    first = submit(model, idempotency_key="doc-42")
    assert submit(model, idempotency_key="doc-42") == first
    # PostgreSQL draws the identity value before ON CONFLICT DO NOTHING: id 2 is skipped.
    assert submit(model, tenant_id=2, idempotency_key="doc-42") == 3
    assert [j.job_id for j in model.jobs()] == [1, 3]


@pytest.mark.parametrize(("kw", "error"), [
    ({"kind": "nope"}, UnknownKind),
    ({"kind": 5}, TypeError),
    ({"payload": {"x": object()}}, InvalidJob),
    ({"payload": {"x": float("nan")}}, InvalidJob),
    ({"payload": {"x": (1, 2)}}, InvalidJob),
    ({"payload": ["not", "a", "dict"]}, InvalidJob),
    ({"payload": {"x": "a" * MAX_PAYLOAD_BYTES}}, PayloadTooLarge),
    ({"max_attempts": 0}, ValueError),
    ({"max_attempts": True}, TypeError),
    ({"tenant_id": "1"}, TypeError),
    ({"run_after": float("inf")}, ValueError),
    ({"run_after": -1}, ValueError),
    ({"run_after": datetime(2026, 1, 1, tzinfo=UTC)}, TypeError),
    ({"deadline": 0}, ValueError),
    ({"idempotency_key": 5}, TypeError),
])
def test_bad_submit_raises_and_stores_nothing(model, kw, error):
    with pytest.raises(error):
        submit(model, **kw)
    assert model.jobs() == []
    assert issubclass(error, ValueError | TypeError)


def test_claim_gives_fresh_lease_and_none_when_nothing_is_due(model, clock):
    submit(model, payload={"text": "a"})
    submit(model, run_after=10)
    first = model.claim(lease=30, worker="w1")
    assert isinstance(first, ModelClaim)
    assert (first.job_id, first.attempt, first.locked_until, first.worker) == (1, 1, 30.0, "w1")
    assert first.payload == {"text": "a"}
    assert model.claim() is None  # job 1 is held, job 2 is not due: "nothing now", not "all done"
    clock.advance(10)
    second = model.claim()
    assert second.job_id == 2 and second.lease_token != first.lease_token


def test_claim_filters_by_kind_and_validates_lease(model):
    submit(model, kind="noop")
    submit(model, kind="summarise")
    assert model.claim(kinds=["summarise"]).job_id == 2
    for bad in (0, -1):
        with pytest.raises(ValueError):
            model.claim(lease=bad)
    with pytest.raises(TypeError):
        model.claim(lease="30")
    with pytest.raises(ValueError):
        model.claim(kinds=[])
    assert model.job(1).state == "pending"


def test_expired_leases_are_claimed_before_due_pending_jobs(model, clock):
    first = submit(model)
    model.claim(lease=5)
    clock.advance(10)
    second = submit(model)
    assert model.claim().job_id == first  # its lease expired at 5: taken over first
    assert model.claim().job_id == second
    assert [c.job_id for c in model.claim_many(5)] == []


def test_reclaim_after_expiry_rejects_the_old_holder(model, clock):
    job_id = submit(model)
    old = model.claim(lease=30)
    clock.advance(29.9)
    assert model.claim() is None  # still leased
    clock.advance(0.1)  # locked_until <= now: expired
    new = model.claim(lease=30)
    assert (new.job_id, new.attempt) == (job_id, 2)
    assert new.lease_token != old.lease_token
    assert model.finish(old, "old result") is False
    assert model.fail(old, "late error") is None
    assert model.heartbeat(old) is False
    assert model.finish(new, "new result") is True
    assert model.results() == {job_id: "new result"}
    assert [a["outcome"] for a in model.history(job_id)] == ["expired", "done"]
    assert model.history(job_id)[0]["finished_at"] == 30.0  # the old lease's end, not now


def test_finish_is_rejected_once_the_lease_has_expired_even_without_a_reclaim(model, clock):
    submit(model)
    held = model.claim(lease=5)
    clock.advance(5)
    assert model.finish(held, "late") is False
    assert model.results() == {}
    assert model.job(1).state == "running"


def test_forged_token_is_rejected(model):
    submit(model)
    real = model.claim()
    forged = ModelClaim(**{**real.__dict__, "lease_token": uuid.uuid4()})
    assert model.finish(forged, "x") is False
    assert model.finish(real, "y") is True
    with pytest.raises(TypeError):
        model.finish("not a claim", "z")


def test_heartbeat_extends_an_owned_lease(model, clock):
    submit(model)
    held = model.claim(lease=10)
    clock.advance(8)
    assert model.heartbeat(held, lease=10) is True
    clock.advance(8)
    assert model.claim() is None
    assert model.finish(held, 1) is True


def test_always_failing_job_ends_failed_after_three_attempts_and_good_job_completes(model, clock):
    bad = submit(model, kind="always_fail")
    good = submit(model)
    for _ in range(20):
        held = model.claim()
        if held is not None:
            if held.kind == "always_fail":
                model.fail(held, RuntimeError("boom"), delay=5)
            else:
                model.finish(held, "ok")
        clock.advance(1)
    assert (model.job(bad).state, model.job(bad).attempts) == ("failed", 3)
    assert model.job(bad).last_error == "RuntimeError: boom"
    assert (model.job(good).state, model.job(good).attempts) == ("done", 1)
    assert model.results() == {good: "ok"}
    assert [a["outcome"] for a in model.history(bad)] == ["retry", "retry", "failed"]


def test_fail_permanent_and_retry_delay(model, clock):
    a, b = submit(model), submit(model)
    ca, cb = model.claim(), model.claim()
    assert model.fail(ca, "bad input", permanent=True) == "failed"
    assert model.fail(cb, "timeout", delay=7) == "pending"
    assert model.job(a).finished_at == 0.0 and model.job(b).run_after == 7.0
    assert model.claim() is None
    clock.advance(7)
    assert model.claim().job_id == b


def test_fail_with_policy_uses_its_delay_cap_and_deadline(model, clock):
    policy = RetryPolicy(max_attempts=5, base=2.0, deadline=10.0)
    job_id = submit(model, max_attempts=9)
    held = model.claim()
    expected = random.Random(7).uniform(0, 2.0)
    assert model.fail(held, "x", policy=policy, rng=random.Random(7)) == "pending"
    assert model.job(job_id).run_after == expected
    clock.advance(9.5)
    held = model.claim()
    # the next retry would start after created_at + 10 s: no retry is scheduled
    assert model.fail(held, "x", policy=RetryPolicy(base=2.0, deadline=10.0, jitter=False)) \
        == "failed"
    with pytest.raises(ValueError):
        model.fail(held, "x", policy=policy, delay=1)
    with pytest.raises(TypeError):
        model.fail(held, "x", policy="fast")


def test_policy_max_attempts_caps_below_the_jobs_own(model, clock):
    job_id = submit(model, max_attempts=5)
    policy = RetryPolicy(max_attempts=2, base=1.0, jitter=False)
    assert model.fail(model.claim(), "x", policy=policy) == "pending"
    clock.advance(1)
    assert model.fail(model.claim(), "x", policy=policy) == "failed"
    assert (model.job(job_id).state, model.job(job_id).attempts) == ("failed", 2)


def test_without_a_policy_the_jobs_own_max_attempts_decides(model, clock):
    job_id = submit(model, max_attempts=5)
    states = []
    for _ in range(5):
        clock.advance(60)  # past any default backoff (cap 60 s)
        states.append(model.fail(model.claim(), "x"))
    assert states == ["pending"] * 4 + ["failed"]
    assert model.job(job_id).attempts == 5


def test_error_text_is_bounded_and_readable(model):
    submit(model), submit(model)
    a, b = model.claim(), model.claim()
    model.fail(a, ValueError("bad pdf"), permanent=True)
    model.fail(b, "x" * (MAX_ERROR_CHARS + 10), permanent=True)
    assert model.job(1).last_error == "ValueError: bad pdf"
    assert len(model.job(2).last_error) == MAX_ERROR_CHARS
    with pytest.raises(ValueError):
        model.fail(a, "")
    with pytest.raises(TypeError):
        model.fail(a, 42)


def test_submit_deadline_stops_retries(model, clock):
    job_id = submit(model, deadline=5)
    held = model.claim()
    clock.advance(3)
    assert model.fail(held, "x", delay=3) == "failed"
    assert model.job(job_id).state == "failed"


def test_expired_lease_without_attempts_left_becomes_failed(model, clock):
    job_id = submit(model, max_attempts=1)
    model.claim(lease=5)
    clock.advance(5)
    assert model.claim() is None
    job = model.job(job_id)
    assert (job.state, job.attempts, job.lease_token) == ("failed", 1, None)
    assert job.last_error == "lease expired on the last attempt (1 of 1)"
    assert model.history(job_id)[0]["outcome"] == "expired"


def test_manual_retry_keeps_the_job_id_and_is_audited(model, clock):
    job_id = submit(model, max_attempts=2)
    for _ in range(2):
        model.fail(model.claim(), "boom", delay=0)
    assert model.job(job_id).state == "failed"
    assert model.retry(tenant_id=2, job_id=job_id, actor="ops", reason="x") is False
    clock.advance(60)
    assert model.retry(tenant_id=1, job_id=job_id, actor="alice", reason="vendor is back")
    job = model.job(job_id)
    assert (job.state, job.attempts, job.max_attempts, job.run_after) == ("pending", 2, 4, 60.0)
    assert job.last_error == "boom"  # the reason stays visible until a new attempt replaces it
    held = model.claim()
    assert (held.job_id, held.attempt) == (job_id, 3)
    assert model.retry(tenant_id=1, job_id=job_id, actor="alice", reason="again") is False
    [entry] = model.audit(job_id)
    assert (entry["actor"], entry["action"], entry["reason"], entry["at"]) == (
        "alice", "retry", "vendor is back", 60.0)
    assert entry["detail"] == {"previous_attempts": 2, "previous_max_attempts": 2,
                               "added_attempts": 2, "last_error": "boom"}


def test_cancel_pending_and_running_then_late_finish_is_rejected(model):
    a, b = submit(model), submit(model, tenant_id=2)
    held = model.claim()
    with pytest.raises(ValueError):
        model.cancel(tenant_id=1, job_id=a, actor="", reason="x")
    assert model.cancel(tenant_id=2, job_id=a, actor="ops", reason="wrong tenant") is False
    assert model.cancel(tenant_id=1, job_id=a, actor="ops", reason="user asked") is True
    assert model.finish(held, "late") is False
    assert model.cancel(tenant_id=2, job_id=b, actor="ops", reason="user asked") is True
    assert model.cancel(tenant_id=2, job_id=b, actor="ops", reason="again") is False
    assert [j.state for j in model.jobs()] == ["cancelled", "cancelled"]
    assert model.results() == {}
    assert [(a["action"], a["detail"]["previous_state"]) for a in model.audit()] == [
        ("cancel", "running"), ("cancel", "pending")]
    assert model.history(a)[0]["outcome"] == "cancelled"


def test_status_hides_other_tenants_jobs(model):
    job_id = submit(model, tenant_id=1)
    assert model.status(tenant_id=1, job_id=job_id).state == "pending"
    assert model.status(tenant_id=2, job_id=job_id) is None
    assert model.status(tenant_id=2, job_id=999) is None


def test_snapshots_cannot_mutate_the_model(model):
    submit(model, payload={"items": [1]})
    held = model.claim()
    held.payload["items"].append(2)
    snap = model.job(1)
    snap.payload["items"].append(3)
    model.history()[0]["outcome"] = "forged"
    assert model.job(1).payload == {"items": [1]}
    assert model.history()[0]["outcome"] is None
    with pytest.raises(AttributeError):
        snap.state = "done"
    assert model.finish(held, {"out": [1]})
    model.results()[1]["out"].append(2)
    assert model.results() == {1: {"out": [1]}}


def test_clock_must_be_callable_and_return_numbers():
    with pytest.raises(TypeError):
        QueueModel(clock=42)
    broken = QueueModel(clock=lambda: "now")
    with pytest.raises(TypeError):
        submit(broken)
    assert broken.jobs() == []
