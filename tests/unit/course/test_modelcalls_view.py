"""views.modelcalls: the simulated model's calls on the manual clock, from the model's own records."""

from __future__ import annotations

import pytest

from cachequeue.clock import ManualClock
from cachequeue.course.app.summariser import Summariser, SummariserError
from cachequeue.course.views import modelcalls


def _model_with_one_failure() -> tuple[Summariser, ManualClock]:
    clock = ManualClock()
    model = Summariser(delay=20, sleep=clock.advance)
    model.summarise("正文。")
    model.summarise("正文。", "en")
    model.fail_next(1)
    with pytest.raises(SummariserError):
        model.summarise("正文。")
    model.summarise("正文。")
    return model, clock


def test_each_call_spans_its_delay_and_the_failure_is_marked():
    model, clock = _model_with_one_failure()
    calls = modelcalls.spans(model)
    assert [(start, end) for start, end, _, _ in calls] == [(0, 20), (20, 40), (40, 60), (60, 80)]
    assert [language for _, _, language, _ in calls] == ["zh", "en", "zh", "zh"]
    assert [failed for *_, failed in calls] == [False, False, True, False]
    assert calls[-1][1] == clock(), "the bars end where the manual clock is"


def test_the_figure_has_one_lane_and_a_bar_per_call():
    model, _ = _model_with_one_failure()
    fig = modelcalls.draw_calls(model)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [modelcalls.LANE]
    labels = {t.get_text() for t in ax.texts}
    assert {"第 1 次 zh", "第 2 次 en", "第 3 次 zh", "第 4 次 zh"} <= labels


@pytest.mark.parametrize(("model", "error"), [("not a model", TypeError), (Summariser(), ValueError)])
def test_bad_input_is_refused(model, error):
    with pytest.raises(error):
        modelcalls.spans(model)
