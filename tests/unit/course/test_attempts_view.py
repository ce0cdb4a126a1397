"""course.views.attempts: attempt rows become seconds since the first claim; the figure
draws a lane per worker, a side effect per attempt, the stored result and the refusal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cachequeue.course.views import attempts

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def rows():
    return [
        {"job_id": 9, "attempt": 1, "worker": "w1", "started_at": T0, "outcome": "expired",
         "finished_at": T0 + timedelta(seconds=31), "rejected_at": T0 + timedelta(seconds=31)},
        {"job_id": 9, "attempt": 2, "worker": "w2", "started_at": T0 + timedelta(seconds=31),
         "outcome": "done", "finished_at": T0 + timedelta(seconds=31), "rejected_at": None},
    ]


def test_rows_become_seconds_since_the_first_claim():
    shown = attempts.from_history(rows(), lease=30)
    assert [(a.worker, a.start, a.lease_end, a.finished, a.refused_at) for a in shown] == [
        ("w1", 0.0, 30.0, None, 31.0), ("w2", 31.0, 61.0, 31.0, None)]


def test_the_figure_marks_effects_results_and_the_refusal():
    ax = attempts.plot_attempts(attempts.from_history(rows(), lease=30)).axes[0]
    # Labels of moments close together on one lane are joined with "、" (one marker group).
    labels = [part for t in ax.texts for part in t.get_text().split("、")]
    assert labels.count("模型调用") == 2 and labels.count("结果写入") == 1
    assert labels.count("迟到的报告被拒绝") == 1
    assert [t.get_text() for t in reversed(ax.get_yticklabels())] == ["工作者 w1", "工作者 w2"]


def test_hostile_input_is_refused():
    with pytest.raises(ValueError, match="never claimed"):
        attempts.from_history([], lease=30)
    with pytest.raises(ValueError, match="one job"):
        attempts.from_history(rows() + [dict(rows()[0], job_id=10)], lease=30)
    with pytest.raises((TypeError, ValueError), match="lease"):
        attempts.from_history(rows(), lease=-1)
    with pytest.raises(ValueError, match="nothing to plot"):
        attempts.plot_attempts([])
