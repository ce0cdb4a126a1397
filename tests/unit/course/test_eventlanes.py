"""The lane figures: spans and marks refuse bad input, the drawing keeps the lane order,
and chapter 01's recorded run is what its picture claims."""

from __future__ import annotations

import asyncio
import math

import pytest

from cachequeue.course.views import coalescing
from cachequeue.course.views.eventlanes import Mark, Span, draw_lanes


@pytest.mark.parametrize(("args", "error"), [
    (("a", 2.0, 1.0), ValueError),          # ends before it starts
    (("a", math.nan, 1.0), ValueError),
    (("", 0.0, 1.0), ValueError),
    ((None, 0.0, 1.0), TypeError),
    (("a", 0.0, 1.0, "purple"), ValueError),
])
def test_a_span_refuses_bad_input(args, error):
    with pytest.raises(error):
        Span(*args)


def test_a_mark_refuses_bad_input():
    with pytest.raises(ValueError):
        Mark("a", math.inf, "x")
    with pytest.raises(ValueError):
        Mark("a", 1.0, "x", "nope")


def test_lanes_are_drawn_top_to_bottom_in_the_given_order():
    fig = draw_lanes([Span("b", 0, 1, "load")], [Mark("a", 0.5, "到达")], title="t",
                     lanes=["a", "b"])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["b", "a"]  # bottom to top
    with pytest.raises(ValueError, match="lanes not in the lane order"):
        draw_lanes([Span("c", 0, 1)], [], title="t", lanes=["a"])
    with pytest.raises(ValueError, match="nothing to draw"):
        draw_lanes([], [], title="t")


def test_the_coalescing_run_shares_one_load_and_its_picture_has_a_lane_per_actor():
    events, cache = asyncio.run(coalescing.record_coalescing((0.0, 0.5), load_until=2.0, late=3.0))
    assert list(events["what"]).count("开始加载") == 1
    assert (cache.stats.loads, cache.stats.coalesced, cache.stats.hits) == (1, 1, 1)
    got = events[events["what"] == "拿到结果"].set_index("who")["at"].to_dict()
    assert got == {"读者 1": 2.0, "读者 2": 2.0, "读者 3": 3.0}
    labels = [t.get_text() for t in coalescing.draw_coalescing(events).axes[0].get_yticklabels()]
    assert labels == ["模型调用", "读者 3", "读者 2", "读者 1"]


@pytest.mark.parametrize("kw", [dict(arrivals=()), dict(arrivals=(1.0, 0.0)),
                                dict(load_until=0.5), dict(late=1.0)])
def test_the_coalescing_run_refuses_a_schedule_out_of_order(kw):
    with pytest.raises(ValueError):
        asyncio.run(coalescing.record_coalescing(**({"arrivals": (0.0, 1.0)} | kw)))


def test_the_race_log_marks_a_holding_stale_while_it_is_older_than_the_document():
    from cachequeue.clock import ManualClock
    from cachequeue.course.views.backfill import CACHE, RaceLog

    clock = ManualClock()
    race = RaceLog(clock)
    race.note("A", "读到版本 3", cached=None, current=3)
    race.note("写入方", "发布版本 4", cached=None, current=4)
    race.note("A", "写回版本 3", cached=3, current=4)
    race.note("B", "命中版本 3", cached=3, current=4)
    clock.advance(30)
    race.note("B", "加载版本 4", cached=4, current=4)
    frame = race.frame()
    assert frame["stale"].tolist() == [False, False, True, True, False]
    assert frame["at"].tolist() == [0, 0, 0, 0, 30]
    ax = race.draw().axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][0] == CACHE
    bars = sorted((round(p.get_x(), 3), round(p.get_width(), 3)) for p in ax.patches)
    assert bars == [(3, 2), (5, 0.6)], "one stale bar from the write-back, one fresh after"
    with pytest.raises(ValueError):
        race.note("B", "x", cached=0, current=4)
    with pytest.raises(TypeError):
        race.note("B", "x", cached="3", current=4)
    assert len(race.rows) == 5, "a refused note writes nothing"
    with pytest.raises(ValueError, match="nothing noted"):
        RaceLog(clock).draw()
    other = race.draw("t", cache_lane="v=4 的键").axes[0]
    assert [t.get_text() for t in other.get_yticklabels()][0] == "v=4 的键"
    with pytest.raises(ValueError):
        race.draw("t", cache_lane="")


def test_close_moments_of_one_lane_share_a_marker_and_their_labels_join():
    fig = draw_lanes([], [Mark("a", 0.0, "订阅"), Mark("a", 0.001, "accepted"),
                          Mark("a", 1.0, "done"), Mark("b", 0.001, "领取")], title="t")
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    assert texts == ["done", "订阅、accepted", "领取"]


def test_a_request_story_puts_log_lines_and_its_own_moments_on_one_axis():
    from datetime import UTC, datetime

    from cachequeue.course.views.servicestory import RequestStory

    story = RequestStory()
    story.note("客户端", "POST", at=datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC))
    story.note("工作者", "领取", at="2026-01-01T00:00:01.250Z")
    story.note("工作者", "完成", at="2026-01-01T00:00:02.500Z")
    frame = story.frame()
    assert frame[["what", "at"]].values.tolist() == [["POST", 0.0], ["领取", 0.25], ["完成", 1.5]]
    fig = story.draw(spans=[("工作者", "领取", "完成", "load", "运行")])
    assert [round(p.get_width(), 3) for p in fig.axes[0].patches] == [1.25]
    with pytest.raises(ValueError, match="never noted"):
        story.draw(spans=[("工作者", "领取", "done", "load", "x")])
    with pytest.raises(ValueError, match="timezone-aware"):
        story.note("客户端", "x", at=datetime(2026, 1, 1))
    with pytest.raises(TypeError):
        story.note("客户端", "x", at=12.5)
    with pytest.raises(ValueError):
        story.note("客户端", "x", at="yesterday")
    assert len(story.rows) == 3, "a refused note writes nothing"
    with pytest.raises(ValueError, match="nothing noted"):
        RequestStory().frame()


def test_a_followed_stream_notes_each_event_as_it_arrives():
    import threading
    from types import SimpleNamespace

    from cachequeue.course.views.servicestory import RequestStory

    gate = threading.Event()

    def feed():
        yield SimpleNamespace(id="1", event="accepted")
        gate.wait(10)
        yield SimpleNamespace(id="2", event="done")

    story = RequestStory()
    following = story.follow(feed(), "事件流")
    assert following.wait(1) == [("1", "accepted")]
    with pytest.raises(TimeoutError, match="1 of 2"):
        following.wait(2, timeout=0.05)
    with pytest.raises(TimeoutError, match="still open"):
        following.join(timeout=0.05)
    gate.set()
    assert following.join() == [("1", "accepted"), ("2", "done")]
    assert story.frame()["what"].tolist() == ["accepted", "done"]

    def broken():
        yield SimpleNamespace(id="1", event="accepted")
        raise ConnectionError("cut")

    with pytest.raises(RuntimeError, match="cut"):
        story.follow(broken(), "事件流").join()
