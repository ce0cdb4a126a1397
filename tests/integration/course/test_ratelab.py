"""A vendor's quota across real processes: per-process limiters multiply it, one bucket in
the database holds it, and the lockstep makes every run give the same counts."""

import pytest

from cachequeue.course.procs import ratelab


@pytest.mark.parametrize(("limit", "total", "each"), [
    ("none", 6.0, [3.0, 3.0]),  # two processes asking 3 a second each
    ("local", 4.0, [2.0, 2.0]),  # 2 a second in each process's memory: twice the quota
    ("database", 2.0, [1.0, 1.0]),  # one bucket of 2 a second, shared
])
def test_two_processes_behind_each_limit(conn, schema, limit, total, each):
    run = ratelab.starts_per_second(conn, schema, limit=limit, per_second=2, ask=3, seconds=4)
    assert run["per_second"] == total and run["per_process"] == each
    assert len(set(run["pids"])) == len(set(run["backend_pids"])) == 2


def test_the_local_bucket_refills_with_the_time_it_is_given():
    bucket = ratelab.LocalBucket(per_second=2, burst=2)
    assert bucket.take(0.0, 5) == 2  # starts full
    assert bucket.take(0.0, 5) == 0
    assert bucket.take(1.5, 5) == 2  # 3 tokens earned, capped at the burst
    assert bucket.take(1.0, 5) == 0  # time going back earns nothing


def test_bad_arguments_start_no_process(conn, schema):
    with pytest.raises(ValueError):
        ratelab.starts_per_second(conn, schema, limit="sometimes")
    with pytest.raises(ValueError):
        ratelab.starts_per_second(conn, schema, limit="none", processes=0)
