"""course.views.redelivery: the takeover track keeps holders, idle times and acks in order,
and finds the stale ack; the chaos run's lanes have one bar per delivery and every refused
late result comes after its redelivery; bad input is refused."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cachequeue.course.views import redelivery


def delivery(consumer, count, entry="1-0"):
    return SimpleNamespace(id=entry, consumer=consumer, deliveries=count, payload={})


def section_four():
    track = redelivery.Track()
    track.took([delivery("a", 1)])
    track.idled("1-0", 600)
    track.took([delivery("b", 2)])
    track.acked("a", "1-0", 1)
    track.acked("b", "1-0", 0)
    return track


def test_the_track_finds_the_takeover_and_the_stale_ack():
    track = section_four()
    assert track.holders("1-0") == [("a", 1), ("b", 2)]
    assert track.idle_before("1-0", "b") == 600 and track.idle_before("1-0", "a") is None
    assert track.acks() == [("a", "1-0", 1, "b"), ("b", "1-0", 0, None)]
    assert track.stale_acks() == [("a", "b")]


def test_an_ack_by_the_holder_is_not_stale():
    track = redelivery.Track()
    track.took([delivery("a", 1)])
    track.acked("a", "1-0", 1)
    assert track.stale_acks() == [] and track.acks() == [("a", "1-0", 1, "a")]


def test_the_figure_marks_the_takeover_and_the_late_ack():
    shown = redelivery.chart(section_four())
    kinds = {(m.lane, m.kind) for m in shown.marks}
    assert {("a", "claim"), ("b", "takeover"), ("a", "late"), ("b", "refused")} <= kinds
    assert shown.order() == ["a", "b", redelivery.PEL]
    fig = redelivery.plot_takeover(section_four())
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list("①②③④⑤")


def test_hostile_input_is_refused_and_nothing_is_noted():
    track = redelivery.Track()
    with pytest.raises(TypeError):
        track.took([object()])
    with pytest.raises(ValueError):
        track.acked("a", "1-0", 2)
    with pytest.raises(ValueError):
        track.idled("1-0", -1)
    assert track.notes == []
    with pytest.raises(ValueError, match="nothing to plot"):
        redelivery.chart(track)


def chaos():
    at = "2026-01-01T00:00:{:06.3f}Z".format
    events = [("w1", "started", 0.0, 7, 1), ("w2", "started", 0.1, 8, 1),
              ("w2", "finished", 0.2, 8, 1), ("w2", "started", 1.3, 7, 2),
              ("w2", "finished", 1.4, 7, 2), ("w1", "stale", 2.5, 7, 1),
              ("w3", "started", 2.6, 9, 1)]
    return {"lease_s": 1.0, "timeline": {
        "events": [{"time": at(t), "worker": w, "event": e, "seq": s, "delivery": d,
                    "refused": "result" if e == "stale" else None} for w, e, t, s, d in events],
        "signals": [{"at": "2026-01-01T00:00:00.500+00:00", "worker": "w1", "signal": "SIGSTOP"},
                    {"at": "2026-01-01T00:00:02.400+00:00", "worker": "w1", "signal": "SIGCONT"},
                    {"at": "2026-01-01T00:00:02.800+00:00", "worker": "w3", "signal": "SIGKILL"}],
        "restarts": [["2026-01-01T00:00:01.000+00:00", "2026-01-01T00:00:01.200+00:00"]]}}


def test_the_chaos_lanes_have_a_bar_per_delivery_and_the_late_result_after_its_redelivery():
    shown = redelivery.chaos_chart(chaos())
    bars = sorted((s.lane, s.kind, round(s.start, 3), round(s.end, 3)) for s in shown.spans)
    assert bars == [("w1", "expired", 0.0, 2.5), ("w1", "pause", 0.5, 2.4),
                    ("w2", "done", 0.1, 0.2), ("w2", "done", 1.3, 1.4),
                    ("w3", "expired", 2.6, 2.8)]  # killed: its bar ends at the SIGKILL
    assert {(m.lane, m.kind) for m in shown.marks} == {("w2", "takeover"), ("w1", "refused"),
                                                       ("w3", "kill")}
    assert [(b.kind, b.start) for b in shown.bands] == [("restart", 1.0)]
    (late,) = redelivery.late_results(chaos())
    assert (late.seq, late.worker, late.newer_worker, late.newer_delivery) == (7, "w1", "w2", 2)
    assert late.started < late.newer_started < late.refused_at


def test_a_run_that_was_not_recorded_is_refused():
    with pytest.raises(ValueError, match="record=True"):
        redelivery.chaos_chart({"lease_s": 1.0})
    broken = chaos()
    broken["timeline"]["events"] = [e for e in broken["timeline"]["events"]
                                    if not (e["seq"] == 7 and e["delivery"] == 2)]
    with pytest.raises(ValueError, match="missing"):
        redelivery.late_results(broken)
