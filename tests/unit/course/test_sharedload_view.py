"""course.views.sharedload: a lane per reader and per load, the load's steps, bad input refused;
capstone.timed brackets an awaitable between two clock readings."""

from __future__ import annotations

import asyncio

import pytest

from cachequeue.course.labs import capstone
from cachequeue.course.views import sharedload

LOAD = {"start": 0.01, "accepted": 0.02, "followed": 0.29, "end": 0.30}


def test_lanes_and_steps():
    ax = sharedload.plot_shared_load([("李雷", 0.0, 0.31), ("韩梅", 0.0, 0.31)], [LOAD]).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "加载 1（提交、跟随、取结果）", "读者 李雷", "读者 韩梅"]
    assert [t.get_text() for t in ax.texts] == ["202", "事件流结束"]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="nothing to plot"):
        sharedload.plot_shared_load([], [LOAD])
    with pytest.raises(ValueError, match="answered before it asked"):
        sharedload.plot_shared_load([("李雷", 1.0, 0.5)], [LOAD])
    with pytest.raises(ValueError, match="start <= end"):
        sharedload.plot_shared_load([("李雷", 0.0, 0.5)], [{"start": 1.0}])


def test_timed_returns_the_value_between_two_readings():
    value, started, answered = asyncio.run(capstone.timed(asyncio.sleep(0, "摘要")))
    assert value == "摘要" and started <= answered
