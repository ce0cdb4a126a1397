"""The chaos runs' plans: a pause freezes a worker inside a long job, so it is planned by
jobs *started* (the done count lags behind the starts: results wait for their batch, and
after a restart for the reconnect), early enough that long jobs are left to catch."""

import random

import pytest

from cachequeue.course.procs import brokerchaos, chaos


def test_the_queue_chaos_plans_its_stops_before_half_the_jobs_started():
    for seed in range(50):
        plan, stops_at = chaos._plan(random.Random(seed), 200, kills=3, stops=4, restarts=1,
                                     flush_kills=1)
        assert len(stops_at) == 4 and stops_at == sorted(stops_at)
        assert all(200 // 40 <= at <= 100 for at in stops_at), stops_at
        assert sorted(a for _, a in plan) == ["flushkill", "kill", "kill", "kill", "restart"]
        assert plan == sorted(plan)


def test_the_broker_chaos_plans_its_pauses_before_half_the_jobs_started():
    for seed in range(50):
        plan, stops_at = brokerchaos._plan(random.Random(seed), 200, kills=3, stops=2,
                                           restarts=1)
        assert len(stops_at) == 2 and stops_at == sorted(stops_at)
        assert all(200 // 20 <= at <= 100 for at in stops_at), stops_at
        assert sorted(a for _, a in plan) == ["kill", "kill", "kill", "restart"]
        assert all(10 <= at <= 170 for at, _ in plan) and plan == sorted(plan)


def test_the_verdict_explained_key_by_key():
    verdict = {key: n for n, key in enumerate(chaos.MEANINGS)}
    rows = chaos.explained(verdict, ["lost", "duplicates"])
    assert rows == [("lost", verdict["lost"], chaos.MEANINGS["lost"]),
                    ("duplicates", verdict["duplicates"], chaos.MEANINGS["duplicates"])]
    assert [key for key, _, _ in chaos.explained(verdict)] == list(chaos.MEANINGS)
    with pytest.raises(ValueError, match="not keys"):
        chaos.explained(verdict, ["lost", "secret"])


@pytest.mark.parametrize("long", [(2.0, 1.0), (0, 1.0), (1.0, 60.0), [1.0, 2.0], (1.0,)])
def test_a_long_job_range_is_checked_before_anything_starts(long):
    with pytest.raises((ValueError, TypeError)):
        chaos.run(jobs=20, long=long)
