"""views.fleetlanes on a real schema, stepped by a manual clock: the lease log keeps every
claim and renewal, the story joins them to the attempts, takeovers are found where a lease
ran out or was handed back, and the figure draws them (or refuses to draw nothing)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from matplotlib.figure import Figure

from cachequeue import db
from cachequeue.clock import ManualClock
from cachequeue.course.views import fleetlanes
from cachequeue.queue import jobs


def test_claims_renewals_takeover_and_refused_report(conn):
    clock = ManualClock()
    db.set_clock(conn, clock.datetime())
    fleetlanes.record(conn)
    fleetlanes.record(conn)  # idempotent
    since = clock.datetime()
    job = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    first = jobs.claim(conn, lease=10, worker="a")
    for _ in range(2):  # two renewals, at 5 s and 10 s
        clock.advance(5)
        db.set_clock(conn, clock.datetime())
        assert jobs.heartbeat(conn, first, lease=10)
    clock.advance(12)  # 22 s: the lease (to 20 s) has run out
    db.set_clock(conn, clock.datetime())
    second = jobs.claim(conn, lease=10, worker="b")
    assert (second.job_id, second.attempt) == (job, 2)
    clock.advance(1)
    db.set_clock(conn, clock.datetime())
    assert not jobs.finish(conn, first, {"late": True})  # a's late report, refused
    assert jobs.finish(conn, second, {"ok": True})

    run = fleetlanes.story(conn, since, [job])
    old, new = run.of(job)
    assert old.leases == ((0.0, 10.0), (5.0, 15.0), (10.0, 20.0))
    assert old.renewals == ((5.0, 15.0), (10.0, 20.0)) and old.lease_end == 20.0
    assert (old.outcome, old.rejected, old.rejected_at) == ("expired", "finish", 23.0)
    assert (new.worker, new.start, new.lease_end, new.outcome) == ("b", 22.0, 32.0, "done")
    assert fleetlanes.takeovers(run) == [{"job": job, "old": "a", "new": "b", "outcome": "expired",
                                          "lease_end": 20.0, "old_end": 20.0, "at": 22.0}]
    assert [a.attempt for a in run.worker("a")] == [1]
    assert fleetlanes.story(conn, since) == run  # every job since the instant: this one
    assert run.seconds(since + timedelta(seconds=1.5)) == 1.5
    marks = [{"at": since + timedelta(seconds=21), "worker": "a", "signal": "SIGKILL"},
             {"at": since - timedelta(seconds=1), "worker": "a", "signal": "SIGSTOP"}]
    assert isinstance(fleetlanes.plot(run, marks, title="测试"), Figure)
    with pytest.raises(ValueError, match="not in lanes"):
        fleetlanes.plot(run, title="测试", lanes=["a"])


def test_a_hand_back_is_a_takeover_before_the_lease_end(conn):
    clock = ManualClock()
    db.set_clock(conn, clock.datetime())
    fleetlanes.record(conn)
    since = clock.datetime()
    job = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    held = jobs.claim(conn, lease=30, worker="d2")
    clock.advance(2)
    db.set_clock(conn, clock.datetime())
    assert jobs.release(conn, held, "stopping") == "pending"
    jobs.claim(conn, lease=30, worker="d3")
    [take] = fleetlanes.takeovers(fleetlanes.story(conn, since, [job]))
    assert (take["outcome"], take["old_end"], take["at"], take["lease_end"]) == ("released", 2.0, 2.0, 30.0)


def test_hostile_input_is_refused(conn):
    clock = ManualClock()
    with pytest.raises(ValueError):
        fleetlanes.story(conn, clock.datetime(), [])
    with pytest.raises(ValueError):
        fleetlanes.story(conn, clock.datetime(), range(1, 1000))
    with pytest.raises(ValueError):
        fleetlanes.story(conn, clock.datetime(), ["1; DROP TABLE jobs"])
    with pytest.raises(TypeError):
        fleetlanes.story(conn, "yesterday", [1])
    fleetlanes.record(conn)
    with pytest.raises(ValueError, match="no attempts"):
        fleetlanes.plot(fleetlanes.story(conn, clock.datetime(), [1]), title="空")
