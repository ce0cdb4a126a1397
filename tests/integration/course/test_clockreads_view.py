"""views.clockreads on a real PostgreSQL: a frozen session reads one moment on every row,
a live one reads a clock that moves on inside the statement."""

from __future__ import annotations

import pytest

from cachequeue import db
from cachequeue.course.views import clockreads


def test_frozen_is_flat_and_live_moves_on(conn, schema):
    db.set_clock(conn, "2026-01-01 00:00:00+00")
    frozen = clockreads.read(conn, 500)
    db.set_clock(conn, None)
    live = clockreads.read(conn, 500)
    assert len(frozen) == len(live) == 500
    assert set(frozen) == {0.0}
    assert live == sorted(live) and live[-1] > 0
    fig = clockreads.draw_readings({"冻结": frozen, "未冻结": live})
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ["冻结", "未冻结"]


@pytest.mark.parametrize(("reads", "error"), [(1, ValueError), (10**6, ValueError), ("9", TypeError)])
def test_bad_counts_are_refused(conn, reads, error):
    with pytest.raises(error):
        clockreads.read(conn, reads)


def test_bad_series_are_refused():
    with pytest.raises(ValueError):
        clockreads.draw_readings({})
    with pytest.raises(ValueError):
        clockreads.draw_readings({"一次": [0.0]})
