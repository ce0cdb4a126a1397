"""The scripted minute: every windowed figure is the number it was built to give."""

import pytest

from cachequeue.clock import ManualClock
from cachequeue.course.labs import minute
from cachequeue.course.views import scrapes
from cachequeue.queue import metrics


def test_the_scripted_minute_gives_the_figures_it_was_built_for(conn):
    clock, spec = ManualClock(), minute.Minute(successes=(1.0, 2.0, 3.0), retries=2,
                                                failures=1, other_successes=2, waiting=2)
    minute.warm_up(conn, clock)
    minute.run_minute(conn, clock, spec)
    table = scrapes.windowed(metrics.snapshot(conn, window=60, top=None))
    one, two = table.loc[("1", "noop")], table.loc[("2", "summarise")]
    assert one.claim_rate == 6 / 60 and one.completion_rate == 3 / 60
    assert one.failure_ratio == 1 / 4 and one.retry_ratio == 2 / 6
    assert (one.p50, one.p95) == (2.0, 2.9)
    assert (two.pending, two.oldest_wait, two.claim_rate) == (2, 60.0, 2 / 60)
    assert one.pending == 0  # the retries come due ten minutes later


def test_a_minute_that_does_not_fit_is_refused():
    with pytest.raises(ValueError, match="does not end within the minute"):
        minute.Minute(successes=(60.0,))


def test_a_burst_makes_one_tenant_run(conn):
    claims = minute.burst(conn, 5, 4)
    assert {c.tenant_id for c in claims} == {5} and len(claims) == 4

