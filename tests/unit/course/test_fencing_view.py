"""course.views.fencing: the track keeps the run's order and holds; the figure draws them."""

from __future__ import annotations

import itertools

import pytest

from cachequeue.course.views import fencing


def kleppmann(ticks=None):
    track = fencing.FenceTrack(clock=ticks or itertools.count().__next__)
    track.acquired("A", 1)
    track.expired("A")
    track.acquired("B", 2)
    track.wrote("B", 2, True)
    track.wrote("A", 1, False)
    return track


def test_the_track_keeps_order_holds_and_refusals():
    track = kleppmann()
    assert track.order() == [("A", "acquired"), ("A", "expired"), ("B", "acquired"),
                             ("B", "wrote"), ("A", "wrote")]
    assert track.holds() == {"A": [(0.0, 1.0, 1)], "B": [(2.0, 4.0, 2)]}
    assert track.refused() == [("A", 1)]


def test_the_figure_has_a_lane_per_holder_and_a_marker_per_write():
    fig = fencing.plot_fencing(kleppmann())
    ax = fig.axes[0]
    assert [t.get_text() for t in reversed(ax.get_yticklabels())] == ["持有者 A", "持有者 B"]
    texts = [t.get_text() for t in ax.texts]
    assert "写入被拒绝（令牌 1）" in texts and "写入被接受（令牌 2）" in texts
    assert len(ax.patches) == 2  # two holds


def test_hostile_input_is_refused_and_nothing_is_noted():
    track = fencing.FenceTrack()
    with pytest.raises(TypeError, match="accepted"):
        track.wrote("A", 1, 1)
    with pytest.raises(ValueError, match="fence"):
        track.acquired("A", 0)
    with pytest.raises(TypeError, match="clock"):
        fencing.FenceTrack(clock=3)
    assert track.events == []
    with pytest.raises(ValueError, match="nothing to plot"):
        fencing.plot_fencing(track)


def test_a_fault_ends_every_open_hold_and_is_a_line_across_the_lanes():
    track = fencing.FenceTrack(clock=itertools.count().__next__)
    track.acquired("B", 2)
    track.wrote("B", 2, True)
    track.fault("Redis 重启")
    track.acquired("C", 1)
    track.wrote("C", 1, False)
    track.wrote("B", 2, True)
    assert track.holds() == {"B": [(0.0, 2.0, 2)], "C": [(3.0, 5.0, 1)]}
    assert track.refused() == [("C", 1)]
    ax = fencing.plot_fencing(track).axes[0]
    assert [t.get_text() for t in reversed(ax.get_yticklabels())] == ["持有者 B", "持有者 C"]
    assert "Redis 重启" in [t.get_text() for t in ax.texts]
