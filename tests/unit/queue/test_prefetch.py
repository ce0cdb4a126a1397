"""The throughput mode's pure parts (`queue.prefetch`, the local queue of `InFlight`):
argument bounds, the refill point, and a job whose lease was lost or ran out while it
waited in the local queue is never started. A manual clock; no database."""

import random
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime

import pytest

from cachequeue.clock import ManualClock
from cachequeue.queue import Worker, prefetch
from cachequeue.queue.context import LOST
from cachequeue.queue.inflight import InFlight, LeaseLostBeforeStart
from cachequeue.queue.jobs import Claim

WAIT = 30


def claim(job_id: int) -> Claim:
    return Claim(job_id, 1, "noop", {"n": job_id}, 1, uuid.uuid4(),
                 datetime(2026, 1, 1, tzinfo=UTC), "w", "s")


def no_db():
    raise AssertionError("touched the database")


@pytest.mark.parametrize(("value", "error"), [
    (-1, ValueError), (prefetch.MAX_PREFETCH + 1, ValueError), (True, TypeError),
    (2.5, TypeError), ("500", TypeError), (None, TypeError),
])
def test_bad_prefetch_is_refused(value, error):
    with pytest.raises(error, match="prefetch"):
        Worker(no_db, {"noop": print}, prefetch=value)


@pytest.mark.parametrize("kwargs, message", [
    ({"prefetch": 10, "heartbeat": 0}, "prefetch needs heartbeats"),
    ({"prefetch": 10, "fair": True}, "prefetch and fair"),
])
def test_prefetch_without_renewals_or_with_the_fair_claim_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Worker(no_db, {"noop": print}, **kwargs)


@pytest.mark.parametrize("value", [0, 1, prefetch.MAX_PREFETCH])
def test_prefetch_within_bounds_is_taken(value):
    worker = Worker(no_db, {"noop": print}, prefetch=value, concurrency=10)
    try:
        # Nothing held: the first claim fills the slots and the local queue.
        assert worker._free() == 10 + value
    finally:
        worker.close()


def test_the_queue_is_refilled_at_half_before_it_runs_dry():
    assert prefetch.refill_at(10, 500) == 260
    assert prefetch.refill_at(1, 1) == 1
    assert prefetch.refill_at(4, 0) == 4


def test_the_claim_waits_until_the_local_queue_is_down_to_half():
    gate = threading.Event()
    clock = ManualClock()
    worker = Worker(no_db, {"noop": lambda p: gate.wait(WAIT)}, concurrency=1, prefetch=4,
                    clock=clock)
    try:
        held = [claim(k) for k in range(5)]
        for c in held[:3]:
            worker._in_flight.start(c, clock())
        assert worker._free() == 2, "3 held <= 1 + 4 // 2: refill up to 5"
        for c in held[3:]:
            worker._in_flight.start(c, clock())
        assert worker._free() == 0, "5 held > 3: the local queue is more than half full"
    finally:
        gate.set()
        worker.close()


def inflight(clock, handler, **kw):
    pokes = threading.Semaphore(0)
    stats = Counter()
    flight = InFlight("w", no_db, {"noop": handler}, poke=pokes.release,
                      log=lambda *a, **k: None, stats=stats, policy=None,
                      rng=random.Random(1), lease=30.0, batch=100, batch_wait=0.05,
                      prefetch=10, concurrency=1, clock=clock, **kw)
    return flight, pokes


def results(flight, pokes, n):
    """Wait as the worker's loop does: a turn begins (woken), takes what arrived, and waits
    for a poke when it wants more; the first result after each turn's start pokes once."""
    while True:
        flight.woken()
        if len(flight._results) >= n:
            return [(c.job_id, r) for c, r in flight._results]
        assert pokes.acquire(timeout=WAIT), f"{len(flight._results)} of {n} results, no poke"


def test_a_job_whose_lease_ran_out_while_it_waited_is_not_started():
    clock = ManualClock()
    gate = threading.Event()
    started = threading.Event()
    ran = []

    def handler(payload):
        started.set()
        gate.wait(WAIT)
        ran.append(payload["n"])
        return payload["n"]

    flight, pokes = inflight(clock, handler)
    try:
        first, second = claim(1), claim(2)
        flight.start(first, clock())
        flight.start(second, clock())  # waits behind the first: one thread
        assert started.wait(WAIT)  # the first runs (its lease was checked as it started)
        clock.advance(31)  # the second's lease (30 s from the claim) ran out meanwhile
        gate.set()
        done = results(flight, pokes, 2)
        assert ran == [1], "the job that waited past its lease was never run"
        assert done[0] == (1, done[0][1]) and done[0][1].output == 1
        assert done[1][0] == 2 and isinstance(done[1][1].error, LeaseLostBeforeStart)
    finally:
        flight.close()


def test_a_job_found_lost_while_it_waited_is_not_started():
    clock = ManualClock()
    gate = threading.Event()
    ran = []
    started = threading.Event()
    flight, pokes = inflight(clock, lambda p: started.set() or gate.wait(WAIT) and ran.append(p["n"]))
    try:
        first, second = claim(1), claim(2)
        flight.start(first, clock())
        flight.start(second, clock())
        assert started.wait(WAIT)
        flight.renewed([first, second], {first.lease_token}, clock())  # the heartbeat: 2 lost
        assert flight._held[second.lease_token].ctx.reason == LOST
        gate.set()
        done = results(flight, pokes, 2)
        assert ran == [1]
        assert isinstance(done[1][1].error, LeaseLostBeforeStart)
    finally:
        flight.close()


def test_jobs_taken_out_of_the_local_queue_are_never_started():
    clock = ManualClock()
    gate = threading.Event()
    started = threading.Event()
    ran = []

    def handler(payload):
        started.set()
        gate.wait(WAIT)
        ran.append(payload["n"])

    flight, pokes = inflight(clock, handler)
    try:
        claims = [claim(k) for k in range(1, 5)]
        for c in claims:
            flight.start(c, clock())
        assert started.wait(WAIT)  # the one thread runs job 1; 2..4 wait
        waiting = flight._pullers.take_all()
        assert [r.claim.job_id for r in waiting] == [2, 3, 4]
        gate.set()
        results(flight, pokes, 1)
        flight.close()
        assert ran == [1]
    finally:
        gate.set()
        flight.close()


def test_results_poke_the_loop_once_per_turn_not_once_per_job():
    clock = ManualClock()
    gate = threading.Event()
    flight, pokes = inflight(clock, lambda payload: gate.wait(WAIT))
    try:
        flight.woken()  # a turn began; no turn begins again until the test says so
        for k in range(5):
            flight.start(claim(k), clock())
        gate.set()
        deadline = time.monotonic() + WAIT
        while len(flight._results) < 5 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert len(flight._results) == 5
        assert pokes.acquire(timeout=0) and not pokes.acquire(timeout=0.05), \
            "five results within one turn poke the loop once"
        flight.woken()  # the next turn: the next result pokes again
        flight.start(claim(9), clock())
        assert pokes.acquire(timeout=WAIT)
    finally:
        flight.close()
