"""cachequeue.lanes, the course's one drawing vocabulary: one colour per kind, bad input
refused, overlapping spans stacked, the figure drawn from the chart only."""

from __future__ import annotations

import math

import pytest

from cachequeue import lanes
from cachequeue.lanes import Band, Chart, Mark, Span


def test_each_kind_has_one_colour_and_the_states_share_theirs():
    assert set(lanes.SPAN_KINDS).isdisjoint(lanes.MARK_KINDS)
    assert lanes.COLOURS["done"] == lanes.COLOURS["accepted"] == lanes.COLOURS["fresh"]
    assert lanes.COLOURS["refused"] == lanes.COLOURS["stale"]
    assert lanes.COLOURS["expired"] == lanes.COLOURS["takeover"] == lanes.COLOURS["expiry"]
    assert lanes.COLOURS["running"] == lanes.COLOURS["load"] == lanes.COLOURS["claim"]


@pytest.mark.parametrize(("make", "error"), [
    (lambda: Span("a", 1.0, 0.5), ValueError),
    (lambda: Span("a", 0.0, 1.0, "refused"), ValueError),   # a mark's kind, not a span's
    (lambda: Span("a", 0.0, 1.0, highlight=1), TypeError),
    (lambda: Mark("a", math.nan), ValueError),
    (lambda: Mark("a", 0.0, kind="done"), ValueError),
    (lambda: Band(2.0, 1.0), ValueError),
    (lambda: Chart("t"), ValueError),                        # nothing to draw
    (lambda: Chart("t", [Span("a", 0, 1)], lanes=["b"]), ValueError),
    (lambda: Chart("t", ["not a span"]), TypeError),
    (lambda: Chart("", [Span("a", 0, 1)]), ValueError),
])
def test_bad_input_is_refused(make, error):
    with pytest.raises(error):
        make()


def test_overlapping_spans_of_one_lane_get_sub_rows_only_when_stacked():
    spans = [Span("w", 0, 2, "done"), Span("w", 1, 3, "retry"), Span("w", 2.5, 4, "done"),
             Span("w", 0, 4, "pause")]
    assert lanes.layout(Chart("t", spans, stack=True)) == {0: (0, 2), 1: (1, 2), 2: (0, 2),
                                                            3: (0, 1)}
    assert set(lanes.layout(Chart("t", spans)).values()) == {(0, 1)}


def test_the_figure_has_a_lane_per_actor_a_bar_per_span_and_the_legend_of_the_kinds_used():
    chart = Chart("租约", [Span("a", 0, 30, "expired", highlight=True), Span("b", 31, 60, "done")],
                  [Mark("b", 31, "接手", "takeover"), Mark("a", 40, "迟到的报告被拒绝", "refused")],
                  [Band(20, 22, "重启", "restart")], lane_labels={"a": "工作者 a"})
    ax = lanes.draw(chart, legend=True).axes[0]
    assert [t.get_text() for t in reversed(ax.get_yticklabels())] == ["工作者 a", "b"]
    bars = [p for p in ax.patches if p.get_gid() == "span"]
    assert [(b.get_x(), b.get_width(), b.get_linewidth() > 0) for b in bars] == [
        (0, 30, True), (31, 29, False)]
    assert {"接手", "迟到的报告被拒绝", "重启"} <= {t.get_text() for t in ax.texts}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "完成（done）", "租约过期（expired）", "接手", "被拒绝", "服务器重启"]
