import asyncio

import pytest

from cachequeue.course.app.summariser import Summariser, SummariserError, summarise_text


def test_summary_is_deterministic_and_depends_on_text_and_language():
    text = "第一季度完成搜索，第二季度上线。"
    assert summarise_text(text) == summarise_text(text)
    assert summarise_text(text).startswith("摘要：第一季度完成搜索")
    assert summarise_text(text, "en") != summarise_text(text, "zh")
    assert summarise_text("另一份文档。") != summarise_text(text)


@pytest.mark.parametrize(("text", "error"), [
    ("", ValueError), ("   ", ValueError), (None, TypeError), (42, TypeError)])
def test_bad_text_is_refused(text, error):
    with pytest.raises(error):
        summarise_text(text)


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="language"):
        summarise_text("正文", "fr")


def test_counts_calls_and_waits_through_the_injected_sleep():
    slept = []
    model = Summariser(delay=2.0, sleep=slept.append)
    model.summarise("正文一。")
    model.summarise("正文二。", "en")
    assert model.calls == 2
    assert slept == [2.0, 2.0]
    assert model.inputs == [("正文一。", "zh"), ("正文二。", "en")]


def test_injected_failures_happen_in_order_then_stop():
    model = Summariser()
    model.fail_next(2)
    for _ in range(2):
        with pytest.raises(SummariserError):
            model.summarise("正文。")
    assert model.summarise("正文。").startswith("摘要")
    assert model.calls == 3
    assert model.failed_calls == [1, 2]


def test_async_call_shares_the_failure_queue():
    model = Summariser()
    model.fail_next(1, error=TimeoutError("slow vendor"))
    with pytest.raises(TimeoutError):
        asyncio.run(model.asummarise("正文。"))
    assert asyncio.run(model.asummarise("正文。")).startswith("摘要")
    assert model.failed_calls == [1]


def test_a_failure_is_recorded_against_the_call_that_raised_it():
    """Concurrent calls: the failure belongs to the call that meets it first at its end."""
    model = Summariser(delay=0.01)

    async def two_calls():
        first = asyncio.create_task(model.asummarise("一。"))
        await asyncio.sleep(0)           # the first call has begun
        model.fail_next(1)
        second = asyncio.create_task(model.asummarise("二。"))
        return await asyncio.gather(first, second, return_exceptions=True)

    outcomes = asyncio.run(two_calls())
    assert isinstance(outcomes[0], SummariserError) and isinstance(outcomes[1], str)
    assert model.failed_calls == [1]


@pytest.mark.parametrize(("delay", "error"), [
    (-1, ValueError), (float("nan"), ValueError), (True, TypeError), ("1", TypeError)])
def test_bad_delay_is_refused(delay, error):
    with pytest.raises(error):
        Summariser(delay=delay)
