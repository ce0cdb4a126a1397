"""Lanes on one time axis (spans and marks from a run's recorded events), one colour per kind.

The course's drawing vocabulary lives on the ground floor, in `cachequeue.lanes`, so that
`cachequeue verify`'s witness (which may not import `course`) is drawn the same way as the
chapters' timelines; this module is its name in the `views` room. One lane per actor (a
reader, a request, a worker, the model, the writer, the cache), a `Span` for an interval
(waiting, loading, a lease held, an attempt and its outcome), a `Mark` for a moment
(arrived, claimed, renewed, taken over, a refused report, a kill), a `Band` for what
happened to every lane (a restart, a partition). Spans and marks come from a run's recorded
events, never from a sketch; each kind has one colour in every figure (`COLOURS`).

    draw_lanes(spans, marks, title="...")        # a matplotlib Figure
    draw_chart(Chart(...), legend=True)          # the same, from a whole Chart
    views.interactive.show(chart)                # the zoomable HTML beside the static image
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from ...lanes import (
    BAND_KINDS,
    COLOURS,
    KINDS,
    MARK_KINDS,
    SPAN_KINDS,
    Band,
    Chart,
    Mark,
    Span,
    draw,
)
from . import fonts  # noqa: F401  (the Chinese font, registered for the learner's figures too)

__all__ = ["BAND_KINDS", "COLOURS", "KINDS", "MARK_KINDS", "SPAN_KINDS", "Band", "Chart", "Mark",
           "Span", "draw_chart", "draw_lanes"]

draw_chart = draw


def draw_lanes(spans: Sequence[Span], marks: Sequence[Mark], *, title: str,
               xlabel: str = "时间（秒）", lanes: Sequence[str] | None = None,
               width: float = 7.0) -> Figure:
    """One row per lane (top to bottom in `lanes` order, else in order of first use)."""
    return draw(Chart(title, tuple(spans), tuple(marks), lanes=lanes, xlabel=xlabel), width=width)
