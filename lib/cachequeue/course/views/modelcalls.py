"""The simulated model's calls on the manual clock: how long each took and which one failed (chapter 00).

    modelcalls.spans(model)          # [(start, end, language, failed), ...] per call
    modelcalls.draw_calls(model)

A `Summariser` whose `sleep` is a `ManualClock`'s `advance` moves that clock by `delay`
seconds per call and nothing else does, so call n runs from (n-1)*delay to n*delay. The
calls' languages and failures are the model's own records (`inputs`, `failed_calls`), not
a sketch; the cell asserts that the clock reads `calls * delay`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import check_instance
from ..app.summariser import Summariser
from .eventlanes import Mark, Span, draw_lanes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["LANE", "draw_calls", "spans"]

LANE = "摘要器"
MAX_CALLS = 200


def spans(model: Summariser) -> list[tuple[float, float, str, bool]]:
    """(start, end, language, failed) of each call, in seconds on the manual clock."""
    check_instance(model, "model", Summariser)
    if not model.calls:
        raise ValueError("the model was never called")
    if model.calls > MAX_CALLS:
        raise ValueError(f"at most {MAX_CALLS} calls can be drawn, the model has {model.calls}")
    failed = set(model.failed_calls)
    return [(n * model.delay, (n + 1) * model.delay, language, n + 1 in failed)
            for n, (_, language) in enumerate(model.inputs)]


def draw_calls(model: Summariser, *, title: str = "摘要器的每次调用（手动时钟）") -> Figure:
    """One lane: each call a bar labelled with its number and language, a failed call in the
    colour of a failure with an X where it raised."""
    calls = spans(model)
    bars = [Span(LANE, start, end, "failed" if failed else "load", f"第 {n} 次 {language}")
            for n, (start, end, language, failed) in enumerate(calls, start=1)]
    marks = [Mark(LANE, end, "失败", "refused") for start, end, _, failed in calls if failed]
    return draw_lanes(bars, marks, title=title, xlabel="手动时钟（秒）", lanes=[LANE], width=7.5)
