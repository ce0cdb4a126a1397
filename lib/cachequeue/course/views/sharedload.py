"""Readers who share one load: each reader's wait as a bar, the one load beneath them with its steps.

    plot_shared_load([("李雷", 0.00, 0.31), ("韩梅", 0.00, 0.31)],
                     [{"start": 0.0, "accepted": 0.02, "followed": 0.29, "end": 0.30}])

Times are `time.monotonic()` readings of one run (`capstone.timed` for the readers, the
loader's own `timings` for the loads), drawn in milliseconds since the earliest of them.
A reader's bar (a wait) runs from its request to its answer, a dot where it got the
summary; a load's bar from its start to its end, with marks where the service answered 202
and where the event stream ended: the course's one vocabulary (`views.eventlanes`). The cell
asserts what the figure shows (one load, every reader answered after it ended).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from ...checks import check_text
from .eventlanes import Chart, Mark, Span
from .eventlanes import draw_chart as draw

__all__ = ["chart", "plot_shared_load"]

STEPS = (("accepted", "202"), ("followed", "事件流结束"))
MAX_LANES = 30


def chart(readers: Sequence[tuple[str, float, float]], loads: Sequence[Mapping[str, float]], *,
          title: str = "并发的读者共用一次加载") -> Chart:
    """The lanes of the module docstring, in milliseconds since the earliest reading."""
    if not readers or not loads:
        raise ValueError("nothing to plot: give at least one reader and one load")
    if len(readers) + len(loads) > MAX_LANES:
        raise ValueError(f"at most {MAX_LANES} lanes")
    for label, start, end in readers:
        check_text(label, "reader label", limit=20)
        if end < start:
            raise ValueError(f"reader {label!r} answered before it asked: {start} > {end}")
    for load in loads:
        if not {"start", "end"} <= set(load) or load["end"] < load["start"]:
            raise ValueError(f"a load needs start <= end, got {dict(load)}")
    t0 = min([start for _, start, _ in readers] + [load["start"] for load in loads])

    def ms(at: float) -> float:
        return (at - t0) * 1000

    spans, marks, names = [], [], {}
    for i, load in enumerate(loads, start=1):
        lane = f"load {i}"
        names[lane] = f"加载 {i}（提交、跟随、取结果）"
        spans.append(Span(lane, ms(load["start"]), ms(load["end"]), "load",
                          detail=f"加载 {i}：{ms(load['start']):.0f}–{ms(load['end']):.0f} 毫秒"))
        marks += [Mark(lane, ms(load[key]), word, "event", detail=f"{word}：{ms(load[key]):.0f} 毫秒")
                  for key, word in STEPS if key in load]
    for j, (label, start, end) in enumerate(readers):
        lane = f"reader {j}"
        names[lane] = f"读者 {label}"
        spans.append(Span(lane, ms(start), ms(end), "wait",
                          detail=f"读者 {label}：{ms(start):.0f} 毫秒请求，{ms(end):.0f} 毫秒拿到摘要"))
        marks.append(Mark(lane, ms(end), "", "accepted", detail=f"读者 {label} 拿到摘要"))
    order = [f"reader {j}" for j in reversed(range(len(readers)))] + \
        [f"load {i}" for i in reversed(range(1, len(loads) + 1))]
    return Chart(title, spans, marks, lanes=order, lane_labels=names,
                 xlabel="毫秒（本次运行的实测时刻；圆点：读者拿到摘要）")


def plot_shared_load(readers: Sequence[tuple[str, float, float]],
                     loads: Sequence[Mapping[str, float]], *,
                     title: str = "并发的读者共用一次加载") -> Figure:
    """The figure of the module docstring."""
    return draw(chart(readers, loads, title=title), width=8)
