"""course.views.chaoslanes: a hand-made chaos timeline (the shape chaos.run(record=True)
returns) becomes one bar per attempt, a refused mark on the late worker's lane, a kill
mark per SIGKILL, a pause per SIGSTOP and a band per restart; bad input is refused; the
chart renders as the interactive HTML and the static figure."""

from __future__ import annotations

import copy
import json

import pytest

from cachequeue.course.procs import chaos
from cachequeue.course.views import chaoslanes, interactive


def attempt(job, n, worker, start, end, outcome, rejected_at=None):
    return {"job": job, "attempt": n, "worker": worker, "start": start, "end": end,
            "outcome": outcome, "rejected": None if rejected_at is None else "finish",
            "rejected_at": rejected_at}


def record():
    """w2 is paused in job 3 past its lease (ends 3.0), w1 takes it over at 3.2 and
    finishes; w2 resumes and its late finish is refused at 4.1. w1 is killed in job 5,
    w1.1 takes its place and job 5 over; then a flush kill pauses and kills w1.1; the
    server restarts between 6 and 6.5."""
    return {
        "since": "2026-12-04T17:00:00+00:00",
        "attempts": [
            attempt(1, 1, "w1", 0.1, 0.2, "done"),
            attempt(2, 1, "w2", 0.1, 0.3, "done"),
            attempt(3, 1, "w2", 0.5, 3.0, "expired", rejected_at=4.1),
            attempt(3, 2, "w1", 3.2, 3.5, "done"),
            attempt(5, 1, "w1", 3.6, 5.0, "expired"),
            attempt(5, 2, "w1.1", 5.1, 5.3, "done"),
            attempt(6, 1, "w1.1", 5.4, 8.0, "expired"),
            attempt(6, 2, "w2", 8.1, 8.2, "done"),
        ],
        "signals": [
            {"worker": "w2", "signal": "SIGSTOP", "at": 0.8},
            {"worker": "w2", "signal": "SIGCONT", "at": 4.0},
            {"worker": "w1", "signal": "SIGKILL", "at": 3.7},
            {"worker": "w1.1", "signal": "SIGSTOP", "at": 5.5},
            {"worker": "w1.1", "signal": "SIGKILL", "at": 5.6},
        ],
        "restarts": [[6.0, 6.5]],
    }


def test_one_bar_per_attempt_and_every_fault_marked():
    rec = record()
    chart = chaoslanes.chart(rec)
    bars = [s for s in chart.spans if s.kind != "pause"]
    assert [(s.lane, s.start, s.end, s.kind) for s in bars] == [
        (a["worker"], a["start"], a["end"], a["outcome"]) for a in rec["attempts"]]
    assert [(m.lane, m.at) for m in chart.marks if m.kind == "refused"] == [("w2", 4.1)]
    assert sorted((m.lane, m.at) for m in chart.marks if m.kind == "kill") == [
        ("w1", 3.7), ("w1.1", 5.6)]
    # the pause of w2 ends at its SIGCONT, the flush kill's pause at the SIGKILL
    assert sorted((s.lane, s.start, s.end) for s in chart.spans if s.kind == "pause") == [
        ("w1.1", 5.5, 5.6), ("w2", 0.8, 4.0)]
    assert [(b.start, b.end, b.kind) for b in chart.bands] == [(6.0, 6.5, "restart")]
    assert chart.order() == ["w1", "w1.1", "w2"]
    assert all("任务" in s.detail for s in bars)


def test_the_refused_report_comes_after_the_lease_it_lost():
    late = chaoslanes.refused(record())
    assert [(a["job"], a["attempt"], a["worker"]) for a in late] == [(3, 1, "w2")]
    assert late[0]["rejected_at"] > late[0]["end"] and late[0]["outcome"] == "expired"


def test_an_unfinished_attempt_and_an_unresumed_pause_run_to_the_last_moment():
    rec = record()
    rec["attempts"].append(attempt(7, 1, "w2", 8.3, None, None))
    rec["signals"].append({"worker": "w2", "signal": "SIGSTOP", "at": 8.4})
    chart = chaoslanes.chart(rec)
    assert chart.spans[8].kind == "running" and chart.spans[8].end == 8.4
    assert ("w2", 8.4, 8.4) in [(s.lane, s.start, s.end) for s in chart.spans if s.kind == "pause"]


@pytest.mark.parametrize("spoil, message", [
    (lambda r: r.pop("signals"), "missing"),
    (lambda r: r.update(attempts=[]), "no attempts"),
    (lambda r: r["attempts"][0].update(end=0.0), "ends before"),
    (lambda r: r["attempts"][0].update(outcome="lost"), "unknown outcome"),
    (lambda r: r["attempts"][0].update(rejected_at=1.0), "both"),
    (lambda r: r["attempts"][0].update(start=float("nan")), "finite"),
    (lambda r: r["signals"].append({"worker": "w1", "signal": "SIGTERM", "at": 1.0}),
     "not a fault signal"),
])
def test_a_spoiled_record_is_refused(spoil, message):
    rec = copy.deepcopy(record())
    spoil(rec)
    with pytest.raises(ValueError, match=message):
        chaoslanes.chart(rec)


def test_not_a_mapping_is_refused():
    with pytest.raises(TypeError):
        chaoslanes.chart([1, 2, 3])


def test_the_chart_renders_interactive_and_static():
    chart = chaoslanes.chart(record())
    html = interactive.html(chart).data
    assert "<svg" in html and "迟到" in html and "http" not in html
    fig = interactive.static(chart)
    assert fig.axes


def test_chaos_timeline_is_json_and_keeps_only_faults():
    from datetime import UTC, datetime, timedelta

    since = datetime(2026, 12, 4, 17, 0, tzinfo=UTC)
    at = since + timedelta(seconds=1.5)
    rows = [(3, 1, "w2", since + timedelta(seconds=0.5), since + timedelta(seconds=3),
             "expired", "finish", since + timedelta(seconds=4.1))]
    marks = [{"at": at, "worker": "w1", "signal": "SIGKILL"},
             {"at": at, "worker": "w2", "signal": "SIGTERM"}]
    timeline = chaos._timeline(since, rows, marks, [(at, at + timedelta(seconds=0.25))])
    assert json.loads(json.dumps(timeline)) == timeline
    assert timeline["attempts"] == [attempt(3, 1, "w2", 0.5, 3.0, "expired", rejected_at=4.1)]
    assert timeline["signals"] == [{"worker": "w1", "signal": "SIGKILL", "at": 1.5}]
    assert timeline["restarts"] == [[1.5, 1.75]]
    assert chaoslanes.chart(timeline).order() == ["w1", "w2"]


def test_run_refuses_a_record_that_is_not_a_bool():
    with pytest.raises((TypeError, ValueError)):
        chaos.run(jobs=20, record="yes")
