"""verify.schedules.check on hand-made snapshots (no database): each violation is found with
its witness, and a clean history has none; the mutant's statements are the real ones minus
the unique key."""

from datetime import UTC, datetime, timedelta

import pytest

from cachequeue.queue import schedules
from cachequeue.verify import schedules as vs

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def m(minutes):
    return T0 + timedelta(minutes=minutes)


def snap(fires, jobs=None, catch_up=0):
    fires = [{"schedule_id": 1, "fire_at": f, "job_id": j, "enqueued_at": e, "scheduler": s}
             for f, j, e, s in fires]
    jobs = jobs if jobs is not None else [{"id": r["job_id"], "idempotency_key": None}
                                          for r in fires]
    return {"schedules": [{"id": 1, "name": "every-5", "cron": "*/5 * * * *", "timezone": "UTC",
                           "catch_up": catch_up, "starts_at": T0}],
            "fires": fires, "jobs": jobs}


PASSES = [vs.Pass("a", m(5), m(5)), vs.Pass("b", m(10), m(10))]


def test_a_clean_history_has_no_violation():
    assert vs.check(snap([(m(5), 1, m(5), "a"), (m(10), 2, m(10), "b")]), PASSES) == []


def test_a_fire_time_enqueued_twice_is_a_duplicate_with_both_rows():
    found = vs.check(snap([(m(5), 1, m(5), "a"), (m(5), 2, m(5), "b"),
                           (m(10), 3, m(10), "b")]), PASSES)
    assert [v.check for v in found] == ["schedule-duplicate"]
    assert [w["scheduler"] for w in found[0].witness] == ["a", "b"] and found[0].number == 11


def test_two_jobs_with_one_key_are_a_duplicate_too():
    jobs = [{"id": 1, "idempotency_key": "schedule:1:x"}, {"id": 2, "idempotency_key": "schedule:1:x"}]
    found = vs.check(snap([(m(5), 1, m(5), "a")], jobs=jobs), PASSES[:1])
    assert [v.check for v in found] == ["schedule-duplicate"] and len(found[0].witness) == 2


def test_a_fire_time_enqueued_after_its_window_is_beyond_the_policy():
    # skip: 12:05's window ends at 12:10; a paused scheduler enqueued it at 12:11
    found = vs.check(snap([(m(5), 1, m(11), "paused"), (m(10), 2, m(10), "b")]), PASSES)
    assert [v.check for v in found] == ["schedule-beyond-policy"]
    assert found[0].witness[0]["scheduler"] == "paused"
    # with catch_up=1 the same row is inside the window
    assert vs.check(snap([(m(5), 1, m(11), "p"), (m(10), 2, m(10), "b")], catch_up=1),
                    PASSES) == []


def test_a_fire_time_a_pass_owed_is_missed_with_that_pass_as_witness():
    found = vs.check(snap([(m(10), 2, m(10), "b")]), PASSES)
    assert [v.check for v in found] == ["schedule-missed"]
    assert found[0].witness[0] == {"row": "pass", "scheduler": "a", "planned": m(5),
                                   "enqueued": m(5)}


def test_what_no_pass_could_enqueue_is_not_missed():
    # nobody passed between 12:05 and 12:10: skip gives 12:05 up, and that is the policy
    assert vs.check(snap([(m(10), 2, m(10), "b")]), PASSES[1:]) == []


def test_a_fire_whose_job_is_gone_is_an_orphan():
    found = vs.check(snap([(m(5), 1, m(5), "a")], jobs=[]), PASSES[:1])
    assert [v.check for v in found] == ["schedule-orphan"]


def test_the_mutant_is_the_real_statements_without_the_unique_key():
    install, enqueue = vs.mutant_sql("install"), vs.mutant_sql("enqueue")
    assert "PRIMARY KEY (schedule_id, fire_at)" in schedules.query("install").sql
    assert "PRIMARY KEY (schedule_id, fire_at)" not in install
    assert "ON CONFLICT DO NOTHING" in enqueue and "'schedule:'" not in enqueue
    assert len(schedules.query("enqueue").sql) - len(enqueue) < 200


def test_use_swaps_the_statements_and_back():
    try:
        vs.use("no-fire-key")
        assert "'schedule:'" not in schedules.query("enqueue").sql
    finally:
        vs.use("real")
    assert "'schedule:'" in schedules.query("enqueue").sql
    with pytest.raises(ValueError, match="variant"):
        vs.use("no-such-mutant")
