"""The cache chapter's workloads and its naive baseline (cachequeue.workload, cachequeue.ttldict)."""

from __future__ import annotations

import asyncio

import pytest

from cachequeue.clock import ManualClock
from cachequeue.course.probes.ttldict import TtlDict
from cachequeue.course.probes.workload import (
    CountingCondition,
    GatedLoader,
    loads_for_readers,
    read_trace,
    replay_hit_ratio,
)


@pytest.mark.parametrize("readers", [1, 2, 7, 100])
def test_loads_for_readers_is_one_with_coalescing_and_n_without(readers):
    assert asyncio.run(loads_for_readers(readers, coalesce=True)) == 1
    assert asyncio.run(loads_for_readers(readers, coalesce=False)) == readers


@pytest.mark.parametrize(("readers", "error"), [
    (0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError), ("3", TypeError)])
def test_loads_for_readers_refuses_bad_counts(readers, error):
    with pytest.raises(error, match="readers"):
        asyncio.run(loads_for_readers(readers, coalesce=True))


def test_read_trace_is_seeded_sorted_and_skewed():
    trace = read_trace(2000, keys=20, rate=5.0, seed=7)
    assert trace == read_trace(2000, keys=20, rate=5.0, seed=7)
    assert trace != read_trace(2000, keys=20, rate=5.0, seed=8)
    times = [t for t, _ in trace]
    assert times == sorted(times) and len(set(times)) == len(times)
    counts = {k: sum(1 for _, key in trace if key == k) for k in ("doc:0", "doc:19")}
    assert counts["doc:0"] > 5 * counts["doc:19"]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"n": 0}, ValueError), ({"n": 5, "keys": 0}, ValueError), ({"n": 5, "rate": 0}, ValueError),
    ({"n": 5, "skew": -1}, ValueError), ({"n": True}, TypeError)])
def test_read_trace_refuses_bad_parameters(kwargs, error):
    with pytest.raises(error):
        read_trace(**kwargs)


def test_hit_ratio_grows_with_the_ttl_and_is_reproducible():
    trace = read_trace(3000, keys=50, rate=10.0, seed=1)
    ratios = [asyncio.run(replay_hit_ratio(trace, ttl=ttl)) for ttl in (0.5, 2, 8, 32)]
    assert ratios == sorted(ratios) and ratios[0] < 0.5 < ratios[-1]
    assert asyncio.run(replay_hit_ratio(trace, ttl=2)) == ratios[1]


def test_gated_loader_counts_and_refuses_a_bad_expectation():
    with pytest.raises(ValueError):
        GatedLoader(expect=0)

    async def scenario():
        gate = GatedLoader("x", expect=2)
        first, second = asyncio.ensure_future(gate()), asyncio.ensure_future(gate())
        await gate.started.wait()
        assert gate.running == 2 and not gate.finished.is_set()
        gate.release.set()
        await gate.finished.wait()
        return await first, await second, gate.calls, gate.running

    assert asyncio.run(scenario()) == ("x", "x", 2, 0)


def test_ttl_dict_keeps_expired_entries_that_are_never_read_again():
    clock = ManualClock()
    naive = TtlDict(clock=clock)
    for i in range(100):
        naive.set(f"doc:{i}", "summary", ttl=1)
    clock.advance(10)
    naive.set("doc:new", "summary", ttl=1)
    assert len(naive) == 101  # nothing removes the 100 expired entries
    assert naive.get("doc:0") is None and len(naive) == 100  # only a read of that key does


def test_counting_condition_reports_waiting_threads():
    import threading

    cond = CountingCondition()
    two_waiting = cond.waiting_reached(2)
    go = False

    def waiter():
        with cond:
            while not go:
                cond.wait()

    threads = [threading.Thread(target=waiter) for _ in range(2)]
    for thread in threads:
        thread.start()
    assert two_waiting.wait(timeout=5)
    with cond:
        assert cond.waiting == 2
        go = True
        cond.notify_all()
    for thread in threads:
        thread.join()
    assert cond.waiting == 0
