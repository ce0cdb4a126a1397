"""Per-tenant limits of the service (tenantlimits): the cap on open streams of a process, and
the settings (the submit bucket lives in the database: tests/integration/service/
test_service_tenant_buckets.py)."""

import pytest

from cachequeue.service.problems import Problem
from cachequeue.service.tenantlimits import TenantLimits


def test_zero_turns_the_limits_off_and_bad_settings_are_refused():
    limits = TenantLimits(submit_rate=0, max_streams=0)
    for _ in range(1000):
        limits.admit_submit(None, 1)  # off: no statement, so no connection needed
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
