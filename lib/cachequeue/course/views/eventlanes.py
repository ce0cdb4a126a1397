"""Lanes on one time axis: who waited, loaded or wrote when, and the moments that matter.

The drawing vocabulary of the cache and service figures (chapters 01, 02, 07): one lane per
actor (a reader, a request, the model, the writer, the cache), a `Span` for an interval
(waiting, loading, a value held), a `Mark` for a moment (arrived, got a result, wrote back).
Spans and marks come from a run's recorded events, never from a sketch; each kind has one
colour in every figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure

from ...checks import check_choice, check_finite, check_text
from .plots import CJK_FONT

__all__ = ["COLOURS", "Mark", "Span", "draw_lanes"]

# One colour per kind, the same in every figure.
COLOURS = {
    "wait": "#b8c4d6",    # waiting for someone else's work
    "load": "#3b6fb6",    # the slow work itself (a model call, a job running)
    "fresh": "#4c9a5a",   # a value that is current
    "stale": "#c8553d",   # a value that is out of date
    "event": "#333333",   # a moment: arrived, answered, notified
    "refused": "#c8553d",  # a moment that went wrong: a stale write, a refusal
}


@dataclass(frozen=True)
class Span:
    """An interval of one lane, [start, end], drawn as a bar with an optional label."""

    lane: str
    start: float
    end: float
    kind: str = "wait"
    label: str = ""

    def __post_init__(self) -> None:
        check_text(self.lane, "lane")
        check_finite(self.start, "start")
        check_finite(self.end, "end", minimum=self.start)
        check_choice(self.kind, "kind", COLOURS)


@dataclass(frozen=True)
class Mark:
    """A moment of one lane, drawn as a marker with its label above it."""

    lane: str
    at: float
    label: str
    kind: str = "event"

    def __post_init__(self) -> None:
        check_text(self.lane, "lane")
        check_finite(self.at, "at")
        check_text(self.label, "label")
        check_choice(self.kind, "kind", COLOURS)


def _close_marks(marks: Sequence[Mark], within: float) -> list[list[Mark]]:
    """Marks of one lane less than `within` apart, grouped (drawn as one, labels joined),
    so that labels of moments a few milliseconds apart do not print over each other."""
    groups: list[list[Mark]] = []
    for mark in sorted(marks, key=lambda m: (m.lane, m.at)):
        last = groups[-1] if groups else None
        if last and last[0].lane == mark.lane and mark.at - last[-1].at < within:
            last.append(mark)
        else:
            groups.append([mark])
    return groups


def draw_lanes(spans: Sequence[Span], marks: Sequence[Mark], *, title: str,
               xlabel: str = "时间（秒）", lanes: Sequence[str] | None = None,
               width: float = 7.0) -> Figure:
    """One row per lane (top to bottom in `lanes` order, else in order of first use)."""
    check_text(title, "title")
    order = list(lanes) if lanes is not None else list(dict.fromkeys(
        [s.lane for s in spans] + [m.lane for m in marks]))
    unknown = {s.lane for s in spans} | {m.lane for m in marks}
    if unknown - set(order):
        raise ValueError(f"lanes not in the lane order: {sorted(unknown - set(order))}")
    if not order:
        raise ValueError("nothing to draw: no spans and no marks")
    row = {lane: len(order) - 1 - i for i, lane in enumerate(order)}
    fig = Figure(figsize=(width, 0.55 * len(order) + 1.4))
    ax = fig.subplots()
    for span in spans:
        ax.barh(row[span.lane], max(span.end - span.start, 1e-9), left=span.start, height=0.5,
                color=COLOURS[span.kind], edgecolor="none")
        if span.label:
            ax.text((span.start + span.end) / 2, row[span.lane], span.label, ha="center",
                    va="center", fontsize=8, fontfamily=CJK_FONT,
                    color="white" if span.kind in ("load", "fresh", "stale") else "black")
    moments = [s.start for s in spans] + [s.end for s in spans] + [m.at for m in marks]
    low, high = min(moments), max(moments)
    for lane_marks in _close_marks(marks, 0.03 * ((high - low) or 1.0)):
        first = lane_marks[0]
        kind = "refused" if any(m.kind == "refused" for m in lane_marks) else first.kind
        ax.plot(first.at, row[first.lane], marker="X" if kind == "refused" else "v",
                color=COLOURS[kind], markersize=7, linestyle="none")
        where = (first.at - low) / ((high - low) or 1.0)
        ax.annotate("、".join(m.label for m in lane_marks), (first.at, row[first.lane] + 0.3),
                    ha="left" if where < 0.1 else "right" if where > 0.9 else "center",
                    va="bottom", fontsize=8, fontfamily=CJK_FONT, color=COLOURS[kind])
    pad = 0.04 * ((high - low) or 1.0)
    ax.set_xlim(low - pad, high + pad)
    ax.set_yticks(range(len(order)), list(reversed(order)), fontfamily=CJK_FONT)
    ax.set_ylim(-0.6, len(order) - 0.1)
    ax.set_xlabel(xlabel, fontfamily=CJK_FONT)
    ax.set_title(title, fontfamily=CJK_FONT)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
