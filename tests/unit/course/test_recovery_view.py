"""course.views.recovery: the outbox steps follow the relays' lines and the broker's log (and
refuse when they disagree); the dead-letter frame follows the attempt and audit rows."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest

from cachequeue.course.views import recovery

IDS = [uuid.uuid4() for _ in range(3)]


def _message(seq, n):
    return {"seq": seq, "event_id": IDS[n], "topic": "job.submitted", "payload": {"n": n}}


def _relays(first=(0, 1)):
    killed = ["relay pid=1", *(f"published event_id={IDS[n]}" for n in first), "holding"]
    return [("中继 1", 0.0, killed, True), ("中继 2", 29.0, ["relay pid=2", "relayed count=0"], False),
            ("中继 3", 30.0, ["relay pid=3", *(f"published event_id={i}" for i in IDS),
                              "relayed count=3"], False)]


MESSAGES = [_message(1, 0), _message(2, 1), _message(3, 0), _message(4, 1), _message(5, 2)]


def test_the_steps_are_the_runs_own():
    steps = recovery.outbox_steps(written=3, relays=_relays(), messages=MESSAGES)
    lanes = {lane: list(steps[steps.lane == lane].kind) for lane in steps.lane.unique()}
    assert lanes["中继 1"] == ["publish", "publish", "kill"]
    assert lanes["中继 2"] == ["nothing"] and lanes["中继 3"] == ["publish"] * 3 + ["mark"]
    assert lanes[recovery.CONSUMER] == ["handled", "handled", "duplicate", "duplicate", "handled"]
    assert list(steps.step) == list(range(len(steps)))
    fig = recovery.plot_outbox(steps, lease=30)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[1].startswith("中继 1") and "第 0 秒" in labels[1]


def test_lines_that_the_broker_does_not_confirm_are_refused():
    with pytest.raises(ValueError, match="disagree"):  # relay 1 claims it sent 1 then 0
        recovery.outbox_steps(written=3, relays=_relays(first=(1, 0)), messages=MESSAGES)
    with pytest.raises(ValueError, match="no relay line"):
        recovery.outbox_steps(written=3, relays=_relays(), messages=[*MESSAGES, _message(6, 2)])
    with pytest.raises(ValueError, match="written"):
        recovery.outbox_steps(written=-1, relays=_relays(), messages=MESSAGES)


def test_the_dead_letter_frame_and_figure():
    t0 = datetime(2026, 1, 1)
    at = lambda s: t0 + timedelta(seconds=s)  # noqa: E731
    history = [{"job_id": j, "attempt": 1, "started_at": at(0), "finished_at": at(0),
                "outcome": "failed", "error": "TimeoutError: vendor"} for j in (1, 2)]
    history += [{"job_id": 1, "attempt": 2, "started_at": at(120), "finished_at": None,
                 "outcome": None, "error": None}]
    audit = [{"job_id": 1, "action": "retry", "at": at(120)},
             {"job_id": 2, "action": "cancel", "at": at(5)}]
    frame = recovery.deadletter_frame(history, audit, since=t0)
    assert list(zip(frame.job_id, frame.event, frame["at"], strict=True)) == [
        (1, "failed", 0.0), (1, "retried", 120.0), (1, "claimed", 120.0), (2, "failed", 0.0)]
    fig = recovery.plot_deadletters(frame, marks={"演练": 0.0}, end=150)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["任务 1", "任务 2"]
    with pytest.raises(ValueError, match="end"):
        recovery.plot_deadletters(frame, marks={}, end=0)
    with pytest.raises(TypeError, match="since"):
        recovery.deadletter_frame(history, audit, since="2026-01-01")


def test_the_cancel_figure_and_its_refusals():
    fig = recovery.plot_cancel({"cancelled": 0.004, "woken": 0.009}, lease=5, heartbeat=5 / 3)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["租约", "工作者（处理函数）", "用户"]
    with pytest.raises(ValueError, match="woken"):  # woken before the cancel
        recovery.plot_cancel({"cancelled": 0.004, "woken": 0.001}, lease=5, heartbeat=1)
    with pytest.raises(ValueError, match="lease"):
        recovery.plot_cancel({"cancelled": 0.004, "woken": 0.009}, lease=0, heartbeat=1)
