"""The deliberately wrong models differ from QueueModel at their one boundary, and only there."""

from __future__ import annotations

import pytest

from cachequeue.course.model.mutants import LateExpiryModel, RetryTooLateModel
from cachequeue.course.model.queue_model import ManualClock, QueueModel


def lease_reported_at(model_class, seconds_after_claim):
    clock = ManualClock()
    model = model_class(clock)
    model.submit(tenant_id=1, kind="noop", payload={})
    claim = model.claim(lease=30)
    clock.advance(seconds_after_claim)
    return model.finish(claim, {"ok": True})


@pytest.mark.parametrize(("seconds", "right", "wrong"), [(29.0, True, True), (30.0, False, True),
                                                         (31.0, False, False)])
def test_late_expiry_model_accepts_a_report_only_at_the_expiry_instant(seconds, right, wrong):
    assert lease_reported_at(QueueModel, seconds) is right
    assert lease_reported_at(LateExpiryModel, seconds) is wrong


def retry_claimed_at(model_class, seconds_after_failure):
    clock = ManualClock()
    model = model_class(clock)
    job = model.submit(tenant_id=1, kind="always_fail", payload={})
    first = model.claim()
    assert first is not None, "a new job is claimable at its run_after, in both models"
    assert model.fail(first, "boom", delay=2.0) == "pending"
    clock.advance(seconds_after_failure)
    claim = model.claim()
    if claim is None:
        assert model.job(job).run_after == 2.0, "run_after is left exactly as it was"
    return None if claim is None else claim.attempt


@pytest.mark.parametrize(("seconds", "right", "wrong"), [(1.5, None, None), (2.0, 2, None),
                                                         (2.5, 2, 2)])
def test_retry_too_late_model_refuses_a_retry_only_at_its_run_after(seconds, right, wrong):
    assert retry_claimed_at(QueueModel, seconds) == right
    assert retry_claimed_at(RetryTooLateModel, seconds) == wrong
