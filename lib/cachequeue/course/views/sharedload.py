"""Readers who share one load: each reader's wait as a bar, the one load beneath them with its steps.

    plot_shared_load([("李雷", 0.00, 0.31), ("韩梅", 0.00, 0.31)],
                     [{"start": 0.0, "accepted": 0.02, "followed": 0.29, "end": 0.30}])

Times are `time.monotonic()` readings of one run (`capstone.timed` for the readers, the
loader's own `timings` for the loads), drawn in milliseconds since the earliest of them.
A reader's bar runs from its request to its answer; a load's bar from its start to its end,
with ticks where the service answered 202 and where the event stream ended. The cell
asserts what the figure shows (one load, every reader answered after it ended).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from ...checks import check_text
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["plot_shared_load"]

STEPS = (("accepted", "202"), ("followed", "事件流结束"))
MAX_LANES = 30


def plot_shared_load(readers: Sequence[tuple[str, float, float]],
                     loads: Sequence[Mapping[str, float]], *,
                     title: str = "并发的读者共用一次加载") -> Figure:
    """The figure of the module docstring."""
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
    lanes = len(readers) + len(loads)
    fig = Figure(figsize=(8, 1.2 + 0.55 * lanes))
    ax = fig.subplots()
    labels = []
    for i, load in enumerate(loads):
        y = i
        ax.barh(y, (load["end"] - load["start"]) * 1000, left=(load["start"] - t0) * 1000,
                height=0.5, color="#fdd0a2", edgecolor="#e6550d")
        for key, word in STEPS:
            if key in load:
                x = (load[key] - t0) * 1000
                ax.plot([x, x], [y - 0.3, y + 0.3], color="#a63603")
                ax.annotate(word, (x, y + 0.32), fontsize=8, color="#a63603", ha="center")
        labels.append(f"加载 {i + 1}（提交、跟随、取结果）")
    for j, (label, start, end) in enumerate(readers):
        y = len(loads) + j
        ax.barh(y, (end - start) * 1000, left=(start - t0) * 1000, height=0.5,
                color="#c6dbef", edgecolor="#3182bd")
        ax.plot((end - t0) * 1000, y, marker="o", color="#31a354", linestyle="none")
        labels.append(f"读者 {label}")
    span = max([end for _, _, end in readers] + [load["end"] for load in loads]) - t0
    ax.set_xlim(-span * 50, span * 1080)  # milliseconds, a margin of 5 % on the left
    ax.set_yticks(range(lanes), labels)
    ax.set_ylim(-0.7, lanes - 0.3)
    ax.set_xlabel("毫秒（本次运行的实测时刻；圆点：读者拿到摘要）")
    ax.set_title(title)
    fig.tight_layout()
    return fig
