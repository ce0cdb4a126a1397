"""The figures of chapters 03 and 04 (views.backoff, claimrace, leases, states): their data
rules and their refusals; the figures themselves are checked by the notebooks' asserts."""

from __future__ import annotations

import pytest

from cachequeue.course.views import backoff, claimrace, leases, states
from cachequeue.queue.retry import RetryPolicy


def test_windows_are_the_jitter_ranges_after_each_start():
    full = RetryPolicy(max_attempts=5, base=4.0, cap=60.0, deadline=30.0)
    assert backoff.windows([0.0, 1.0, 5.0], full) == [(0.0, 4.0), (1.0, 9.0), (5.0, 21.0)]
    equal = RetryPolicy(max_attempts=5, base=4.0, cap=60.0, jitter="equal")
    assert backoff.windows([0.0], equal) == [(2.0, 4.0)]
    fig = backoff.plot_attempts([0.0, 1.0], full, rejected=40.0)
    assert len(fig.axes[0].get_yticks()) == 3


@pytest.mark.parametrize("bad", [[], [float("nan")], ["1"]])
def test_windows_refuse_bad_starts(bad):
    with pytest.raises((TypeError, ValueError)):
        backoff.windows(bad, RetryPolicy())


def test_a_lease_must_be_extended_by_its_renewals():
    lease = leases.Lease("a", 0.0, 30.0, renewals=((20.0, 50.0), (35.0, 65.0)))
    assert lease.last_end == 65.0
    with pytest.raises(ValueError, match="renewal"):
        leases.Lease("a", 0.0, 30.0, renewals=((40.0, 70.0),))  # after the lease ran out
    with pytest.raises(ValueError, match="ends after"):
        leases.Lease("a", 10.0, 5.0)
    with pytest.raises(ValueError, match="nothing to plot"):
        leases.plot_leases([])
    fig = leases.plot_leases([lease, leases.Lease("b", 65.0, 95.0)], refused=[("a", 65.0, "x")])
    assert {t.get_text() for t in fig.axes[0].get_yticklabels()} == {"工作者 a", "工作者 b"}


def test_a_race_is_drawn_from_its_steps_only():
    race = claimrace.Race([claimrace.Step("a", ("SELECT",), 4), claimrace.Step("b", ("UPDATE",), None)])
    fig = claimrace.plot_races({"x": race})
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert texts == {"SELECT\n→ 任务 4", "UPDATE\n→ 没有可领的"}
    with pytest.raises(ValueError, match="nothing to plot"):
        claimrace.plot_races({"x": claimrace.Race()})
    assert claimrace._verb("-- Step two: mark it ours. UPDATE jobs SET x = 1") == "UPDATE"


def test_states_table_is_closed_and_edges_select_by_operation():
    assert states.edges(["cancel"]) == {("pending", "cancelled"), ("running", "cancelled")}
    assert {s for t in states.TRANSITIONS for s in (t.source, t.target)} == set(states.STATES)
    with pytest.raises(ValueError, match="no operation"):
        states.plot_states(["explode"])


def test_claimflow_reads_the_statement_text_itself():
    from cachequeue.course.views import claimflow

    flow = claimflow.parse("""-- picked reads nothing: 'fresh' here is a comment
        WITH clock AS MATERIALIZED (SELECT cq_now() AS now),
             fresh AS (SELECT id FROM jobs, clock WHERE note <> 'picked (' AND run_after <= clock.now),
             picked AS (SELECT id FROM fresh)
        UPDATE jobs SET state = 'running' FROM picked WHERE jobs.id = picked.id""")
    assert flow.parts == ("clock", "fresh", "picked")
    assert flow.reads == {"clock": (), "fresh": ("clock",), "picked": ("fresh",)}
    assert flow.final == ("picked",)
    assert ("picked", claimflow.FINAL) in flow.edges()
    with pytest.raises(ValueError, match="no WITH"):
        claimflow.parse("SELECT 1")
    with pytest.raises(ValueError, match="unbalanced"):
        claimflow.parse("WITH a AS (SELECT (1) SELECT 1")
    assert claimflow.plot_flow(flow).axes[0].get_title()
