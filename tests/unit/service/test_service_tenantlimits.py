"""Per-tenant limits of one service process (tenantlimits): the submit bucket on a manual
clock, and the cap on open streams."""

import pytest

from cachequeue.service.problems import Problem
from cachequeue.service.tenantlimits import MAX_BUCKETS, TenantLimits


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_tenant_gets_its_burst_then_429_with_retry_after_then_the_rate():
    clock = Clock()
    limits = TenantLimits(submit_rate=0.5, submit_burst=3, clock=clock)
    for _ in range(3):
        limits.admit_submit(1)
    with pytest.raises(Problem) as refused:
        limits.admit_submit(1)
    assert (refused.value.status, refused.value.code) == (429, "rate_limited")
    assert refused.value.headers == {"Retry-After": "2"}  # one token every 2 s
    limits.admit_submit(2)  # another tenant has its own bucket
    clock.now += 2.0
    limits.admit_submit(1)
    with pytest.raises(Problem):
        limits.admit_submit(1)
    assert limits.refused["rate_limited"] == 2


def test_zero_turns_the_limits_off_and_bad_settings_are_refused():
    limits = TenantLimits(submit_rate=0, max_streams=0)
    for _ in range(1000):
        limits.admit_submit(1)
        limits.stream_started(1)
    limits.check_stream(1, 1)
    with pytest.raises(ValueError, match="submit_rate"):
        TenantLimits(submit_rate=-1)
    with pytest.raises(ValueError, match="submit_burst"):
        TenantLimits(submit_burst=0.5)
    with pytest.raises(TypeError, match="max_streams"):
        TenantLimits(max_streams=1.5)


def test_the_stream_cap_counts_open_streams_per_tenant():
    limits = TenantLimits(max_streams=2)
    limits.stream_started(1)
    limits.stream_started(1)
    with pytest.raises(Problem) as refused:
        limits.check_stream(1, 5)
    assert (refused.value.status, refused.value.code) == (429, "too_many_streams")
    assert refused.value.headers == {"Retry-After": "5"}
    limits.check_stream(2, 5)
    limits.stream_ended(1)
    limits.check_stream(1, 5)
    limits.stream_ended(1)
    limits.stream_ended(1)  # an extra end leaves no negative count behind
    assert limits.streams(1) == 0


def test_the_buckets_stay_bounded():
    clock = Clock()
    limits = TenantLimits(submit_rate=1, submit_burst=2, clock=clock)
    for tenant in range(MAX_BUCKETS + 50):
        limits.admit_submit(tenant)
    assert len(limits._buckets) <= MAX_BUCKETS
