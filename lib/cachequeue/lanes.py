"""Lanes on one time axis: the course's one drawing vocabulary, for every part that draws.

    chart = Chart("租约与接手", spans=[Span("a", 0, 30, "expired", detail="job 7 #1")],
                  marks=[Mark("b", 31, "接手", "takeover"), Mark("a", 40, "迟到的报告被拒绝", "refused")])
    fig = draw(chart)                      # a matplotlib Figure (no pyplot)
    laneshtml.to_html(chart)               # the same chart, zoomable, as one offline HTML block

One lane per actor (a worker, a reader, a lock holder, a consumer), a `Span` for an interval
(a lease held, an attempt with its outcome, a wait, a load), a `Mark` for a moment (a
claim, a renewal, a takeover, a refused report, a kill), a `Band` for what happens to every
lane at once (a server restart, a partition, the lock service's fault). Each kind has ONE
colour and shape in every chapter and in `cachequeue verify`'s witness (`KINDS`): an
attempt that ended `done` is the same green as a write that was accepted, a refused report
is the same red X everywhere. Labels are Chinese, drawn with the font shipped in the
`pylopdf-fonts-zh-cn` wheel (registered on import, as `course.views.fonts` does).

This is ground floor: it imports no part, so `verify` (which may not import `course`) and
the course's `views` draw through the same code. Charts are built from a run's recorded
events by the caller; nothing here invents a moment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import matplotlib
import pylopdf_fonts_zh_cn
from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .checks import check_bool, check_choice, check_finite, check_text

__all__ = ["BAND_KINDS", "COLOURS", "KINDS", "MARK_KINDS", "SPAN_KINDS", "Band", "Chart",
           "Kind", "Mark", "Span", "draw", "layout", "legend_handles"]

CJK_FONT_FILE = str(pylopdf_fonts_zh_cn.sans_path())
if not any(f.fname == CJK_FONT_FILE for f in font_manager.fontManager.ttflist):
    font_manager.fontManager.addfont(CJK_FONT_FILE)
CJK_FONT = font_manager.FontProperties(fname=CJK_FONT_FILE).get_name()
if CJK_FONT not in matplotlib.rcParams["font.family"]:
    matplotlib.rcParams["font.family"] = [*matplotlib.rcParams["font.family"], CJK_FONT]


class Kind(NamedTuple):
    """How one kind is drawn: its colour, its matplotlib marker ("bar" for a span, "band"
    for a band, "|" for a tick across the lane), and its legend entry."""

    colour: str
    shape: str
    legend: str


# One colour per state, the same in every figure. Spans (intervals of one lane):
SPAN_KINDS = {
    "wait": Kind("#b8c4d6", "bar", "等待"),
    "load": Kind("#3b6fb6", "bar", "加载（慢的工作）"),
    "running": Kind("#3b6fb6", "bar", "运行中"),
    "lease": Kind("#a9c4e4", "bar", "持有租约"),
    "fresh": Kind("#4c9a5a", "bar", "当前的值"),
    "stale": Kind("#c8553d", "bar", "过期的值"),
    "done": Kind("#4c9a5a", "bar", "完成（done）"),
    "retry": Kind("#d9a53f", "bar", "失败后重试（retry）"),
    "failed": Kind("#2b2b2b", "bar", "最终失败（failed）"),
    "expired": Kind("#e08a3c", "bar", "租约过期（expired）"),
    "released": Kind("#8c6bb1", "bar", "交还（released）"),
    "cancelled": Kind("#9e9e9e", "bar", "取消（cancelled）"),
    "pause": Kind("#cfcfcf", "bar", "进程暂停"),
}
# Marks (moments of one lane):
MARK_KINDS = {
    "event": Kind("#333333", "v", "事件"),
    "claim": Kind("#3b6fb6", "o", "领取"),
    "renewal": Kind("#4c9a5a", "v", "续租"),
    "takeover": Kind("#e08a3c", "D", "接手"),
    "expiry": Kind("#e08a3c", "|", "租约到期"),
    "replaced": Kind("#888888", "|", "被续租替换的终点"),
    "accepted": Kind("#4c9a5a", "o", "写入被接受"),
    "refused": Kind("#c8553d", "X", "被拒绝"),
    "late": Kind("#c8553d", "P", "迟到却被接受"),
    "effect": Kind("#e6550d", "*", "副作用"),
    "kill": Kind("#000000", "x", "进程被杀"),
    "signal": Kind("#6a1b9a", "s", "信号"),
}
# Bands (every lane at once; start == end is a line):
BAND_KINDS = {
    "fault": Kind("#636363", "band", "故障"),
    "restart": Kind("#7e57c2", "band", "服务器重启"),
    "partition": Kind("#f0a030", "band", "网络分区"),
}
KINDS = {**SPAN_KINDS, **MARK_KINDS, **BAND_KINDS}
COLOURS = {name: kind.colour for name, kind in KINDS.items()}
"""kind -> colour, every kind."""

_DARK = {"load", "running", "fresh", "stale", "done", "failed", "released"}
MAX_LANES = 300
MAX_ITEMS = 50_000


@dataclass(frozen=True)
class Span:
    """An interval of one lane, [start, end], drawn as a bar with an optional label;
    `detail` is the hover text of the interactive view, `highlight` a thick red edge
    (verify's witness)."""

    lane: str
    start: float
    end: float
    kind: str = "wait"
    label: str = ""
    detail: str = ""
    highlight: bool = False

    def __post_init__(self) -> None:
        check_text(self.lane, "lane")
        check_finite(self.start, "start")
        check_finite(self.end, "end", minimum=self.start)
        check_choice(self.kind, "kind", SPAN_KINDS)
        check_bool(self.highlight, "highlight")


@dataclass(frozen=True)
class Mark:
    """A moment of one lane, drawn as its kind's marker with its label above it."""

    lane: str
    at: float
    label: str = ""
    kind: str = "event"
    detail: str = ""

    def __post_init__(self) -> None:
        check_text(self.lane, "lane")
        check_finite(self.at, "at")
        check_choice(self.kind, "kind", MARK_KINDS)


@dataclass(frozen=True)
class Band:
    """What happened to every lane at once, [start, end] (a line when they are equal)."""

    start: float
    end: float
    label: str = ""
    kind: str = "fault"
    detail: str = ""

    def __post_init__(self) -> None:
        check_finite(self.start, "start")
        check_finite(self.end, "end", minimum=self.start)
        check_choice(self.kind, "kind", BAND_KINDS)


@dataclass(frozen=True)
class Chart:
    """Everything one lane figure shows. `lanes` orders the lanes top to bottom (default:
    order of first use); `lane_labels` names them on the axis; `stack` gives spans that
    overlap on one lane sub-rows (a worker running several jobs at once)."""

    title: str
    spans: Sequence[Span] = ()
    marks: Sequence[Mark] = ()
    bands: Sequence[Band] = ()
    lanes: Sequence[str] | None = None
    lane_labels: Mapping[str, str] = field(default_factory=dict)
    xlabel: str = "时间（秒）"
    stack: bool = False

    def __post_init__(self) -> None:
        check_text(self.title, "title", limit=200)
        for name, items, kind in (("spans", self.spans, Span), ("marks", self.marks, Mark),
                                  ("bands", self.bands, Band)):
            if any(not isinstance(item, kind) for item in items):
                raise TypeError(f"{name} must all be {kind.__name__} objects")
        if len(self.spans) + len(self.marks) + len(self.bands) > MAX_ITEMS:
            raise ValueError(f"a chart holds at most {MAX_ITEMS} spans, marks and bands")
        used = {s.lane for s in self.spans} | {m.lane for m in self.marks}
        order = self.order()
        if used - set(order):
            raise ValueError(f"lanes not in the lane order: {sorted(used - set(order))}")
        if not order:
            raise ValueError("nothing to draw: no spans and no marks")
        if len(order) > MAX_LANES:
            raise ValueError(f"at most {MAX_LANES} lanes, got {len(order)}")

    def order(self) -> list[str]:
        """The lanes, top to bottom."""
        if self.lanes is not None:
            return list(self.lanes)
        return list(dict.fromkeys([s.lane for s in self.spans] + [m.lane for m in self.marks]))

    def label(self, lane: str) -> str:
        return self.lane_labels.get(lane, lane)

    def extent(self) -> tuple[float, float]:
        """The earliest and the latest moment the chart shows."""
        moments = ([s.start for s in self.spans] + [s.end for s in self.spans]
                   + [m.at for m in self.marks] + [b.start for b in self.bands]
                   + [b.end for b in self.bands])
        return min(moments), max(moments)

    def kinds(self) -> list[str]:
        """The kinds the chart uses, in `KINDS` order (the legend's entries)."""
        used = ({s.kind for s in self.spans} | {m.kind for m in self.marks}
                | {b.kind for b in self.bands})
        return [k for k in KINDS if k in used]


def layout(chart: Chart) -> dict[int, tuple[int, int]]:
    """Per span (its index in `chart.spans`): (slot, slots of its lane). Without `stack`,
    or for a pause (drawn behind the lane), every span has the whole lane: (0, 1)."""
    chosen: dict[int, tuple[str, int]] = {}
    ends: dict[str, list[float]] = {}
    if chart.stack:
        ranked = sorted((i for i, s in enumerate(chart.spans) if s.kind != "pause"),
                        key=lambda i: (chart.spans[i].start, i))
        for i in ranked:
            span = chart.spans[i]
            free = ends.setdefault(span.lane, [])
            slot = next((n for n, e in enumerate(free) if e <= span.start), len(free))
            free[slot:slot + 1] = [span.end]
            chosen[i] = (span.lane, slot)
    return {i: ((chosen[i][1], len(ends[chosen[i][0]])) if i in chosen else (0, 1))
            for i in range(len(chart.spans))}


def _close_marks(marks: Sequence[Mark], within: float) -> list[list[Mark]]:
    """Labelled marks of one lane less than `within` apart, grouped (drawn as one, labels
    joined), so that labels of moments a few milliseconds apart do not print over each other."""
    groups: list[list[Mark]] = []
    for mark in sorted(marks, key=lambda m: (m.lane, m.at)):
        last = groups[-1] if groups else None
        if last and last[0].lane == mark.lane and mark.at - last[-1].at < within:
            last.append(mark)
        else:
            groups.append([mark])
    return groups


def draw(chart: Chart, *, ax=None, width: float = 7.0, legend: bool = False,
         row_height: float = 0.55) -> Figure:
    """The chart as a matplotlib Figure (on `ax` when given, else on a new Figure)."""
    order = chart.order()
    row = {lane: len(order) - 1 - i for i, lane in enumerate(order)}
    if ax is None:
        fig = Figure(figsize=(width, row_height * len(order) + 1.4))
        ax = fig.subplots()
    low, high = chart.extent()
    scale = (high - low) or 1.0
    for band in chart.bands:
        colour = BAND_KINDS[band.kind].colour
        if band.end > band.start:
            ax.axvspan(band.start, band.end, color=colour, alpha=0.18, linewidth=0)
        else:
            ax.axvline(band.start, color=colour, linestyle=":", linewidth=1.5)
        if band.label:
            ax.annotate(band.label, (band.start, len(order) - 0.45), fontsize=8, color=colour)
    slots = layout(chart)
    for i, span in enumerate(chart.spans):
        slot, count = slots[i]
        y = row[span.lane]
        if span.kind == "pause":
            ax.barh(y, max(span.end - span.start, 1e-9), left=span.start, height=0.9,
                    color=SPAN_KINDS["pause"].colour, alpha=0.6, edgecolor="none", gid="pause",
                    zorder=0.5)  # behind the bars: a paused worker's attempt stays visible
            continue
        height = 0.5 / count
        centre = y - 0.25 + (slot + 0.5) * height
        ax.barh(centre, max(span.end - span.start, 1e-9), left=span.start,
                height=height * (0.9 if count > 1 else 1.0), color=SPAN_KINDS[span.kind].colour,
                edgecolor="red" if span.highlight else "none", gid="span",
                linewidth=2.5 if span.highlight else 0)
        if span.label:
            ax.text((span.start + span.end) / 2, centre, span.label, ha="center", va="center",
                    fontsize=8, color="white" if span.kind in _DARK else "black")
    ticks = [m for m in chart.marks if MARK_KINDS[m.kind].shape == "|"]
    for mark in ticks:
        y = row[mark.lane]
        ax.plot([mark.at, mark.at], [y - 0.32, y + 0.32], color=MARK_KINDS[mark.kind].colour,
                linestyle="--", linewidth=1.2)
        if mark.label:
            ax.annotate(mark.label, (mark.at, y - 0.34), ha="center", va="top", fontsize=7,
                        color=MARK_KINDS[mark.kind].colour)
    points = [m for m in chart.marks if MARK_KINDS[m.kind].shape != "|"]
    for group in _close_marks(points, 0.03 * scale):
        first = group[0]
        kind = "refused" if any(m.kind == "refused" for m in group) else first.kind
        for m in group if len({m.kind for m in group}) > 1 else [first]:
            shape = MARK_KINDS[m.kind]
            ax.plot(m.at, row[m.lane], marker=shape.shape, color=shape.colour,
                    markersize=8 if m.kind in ("refused", "effect") else 7, linestyle="none")
        text = "、".join(m.label for m in group if m.label)
        if text:
            where = (first.at - low) / scale
            ax.annotate(text, (first.at, row[first.lane] + 0.3),
                        ha="left" if where < 0.1 else "right" if where > 0.9 else "center",
                        va="bottom", fontsize=8, color=MARK_KINDS[kind].colour)
    pad = 0.04 * scale
    ax.set_xlim(low - pad, high + pad)
    ax.set_yticks(range(len(order)), [chart.label(lane) for lane in reversed(order)])
    ax.set_ylim(-0.6, len(order) - 0.1)
    ax.set_xlabel(chart.xlabel)
    ax.set_title(chart.title)
    ax.grid(True, axis="x", alpha=0.3)
    if legend:
        ax.legend(handles=legend_handles(chart), loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  fontsize=8)
    figure = ax.get_figure()
    figure.tight_layout()
    return figure


def legend_handles(chart: Chart) -> list:
    """One legend entry per kind the chart uses."""
    handles = []
    for name in chart.kinds():
        kind = KINDS[name]
        if kind.shape in ("bar", "band"):
            handles.append(Patch(color=kind.colour, alpha=0.18 if kind.shape == "band" else 1,
                                 label=kind.legend))
        elif kind.shape == "|":
            handles.append(Line2D([], [], linestyle="--", color=kind.colour, label=kind.legend))
        else:
            handles.append(Line2D([], [], marker=kind.shape, color=kind.colour,
                                  linestyle="none", label=kind.legend))
    return handles
