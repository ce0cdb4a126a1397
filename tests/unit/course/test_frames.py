import pytest

from cachequeue.course.model.queue_model import ManualClock, QueueModel
from cachequeue.course.views import frames as metrics
from cachequeue.course.views import plots
from cachequeue.queue.retry import RetryPolicy


def test_retry_times_without_jitter_is_the_ceiling_schedule():
    frame = metrics.retry_times(RetryPolicy(max_attempts=4, base=1.0, jitter=False), jobs=3)
    assert len(frame) == 9
    assert sorted(set(frame["at"])) == [1.0, 3.0, 7.0]  # 1, 1 + 2, 1 + 2 + 4
    assert metrics.peak(frame["at"]) == 3


def test_retry_times_with_jitter_is_seeded_and_bounded():
    policy = RetryPolicy(max_attempts=3, base=2.0)
    first = metrics.retry_times(policy, jobs=50, seed=1)
    assert first.equals(metrics.retry_times(policy, jobs=50, seed=1))
    assert not first.equals(metrics.retry_times(policy, jobs=50, seed=2))
    one = first[first.attempt == 1]["at"]
    assert ((one >= 0) & (one <= 2.0)).all() and one.nunique() == 50
    with pytest.raises(ValueError):
        metrics.retry_times(policy, jobs=0)


def test_peak_counts_the_fullest_bucket():
    assert metrics.peak([0.1, 0.9, 1.0, 2.5], width=1.0) == 2
    assert metrics.peak([]) == 0
    with pytest.raises(ValueError):
        metrics.peak([1.0], width=0)


def test_model_frame_has_the_database_columns():
    clock = ManualClock()
    model = QueueModel(clock)
    model.submit(tenant_id=1, kind="noop", payload={})
    model.finish(model.claim(lease=10), {"ok": True})
    frame = metrics.model_frame(model)
    assert list(frame.columns) == metrics.JOB_COLUMNS
    row = frame.iloc[0].to_dict()
    assert (row["state"], row["attempts"], row["has_result"], row["locked_until"]) == (
        "done", 1, True, None)
    history = metrics.attempts_frame(model.history())
    assert history[["attempt", "worker", "outcome"]].values.tolist() == [[1, None, "done"]]


def test_plot_retry_times_draws_one_panel_per_schedule():
    fig = plots.plot_retry_times({"no jitter": [1.0] * 5, "jitter": [0.2, 0.4, 0.9]}, width=0.5)
    assert len(fig.axes) == 2
    assert [ax.get_title() for ax in fig.axes] == ["no jitter", "jitter"]
    assert max(p.get_height() for p in fig.axes[0].patches) == 5
    with pytest.raises(ValueError):
        plots.plot_retry_times({})
    with pytest.raises(ValueError):
        plots.plot_retry_times({"a": [1.0]}, width=0)
