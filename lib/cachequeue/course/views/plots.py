"""Matplotlib figures for the notebooks, labelled in Chinese. Each function returns its Figure.

Importing it registers the Chinese font (`course.fonts`), so labels and legends in Chinese
render on any laptop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from ...checks import check_seconds
from .fonts import CJK_FONT, CJK_FONT_FILE

__all__: list[str] = [
    "CJK_FONT",
    "CJK_FONT_FILE",
    "plot_hit_ratio_vs_ttl",
    "plot_loads_vs_readers",
    "plot_retry_times",
]


def _line_figure(xs: Sequence, series: Mapping[str, Sequence], *, xlabel: str, ylabel: str,
                 title: str, log_y: bool) -> Figure:
    """One line per series over shared x values, log-scaled x (the shape of both cache plots)."""
    _check_series(xs, series)
    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    for (label, ys), marker in zip(series.items(), "os^v", strict=False):
        ax.plot(xs, ys, marker=marker, label=label)
    ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_loads_vs_readers(readers: Sequence[int], loads: Mapping[str, Sequence[int]]) -> Figure:
    """Loads caused by N concurrent readers of one cold key, one line per cache.

    `loads` maps a label (e.g. "合并请求") to the load count for each value of `readers`.
    Log-log, so "one load" and "one load per reader" are both straight lines.
    """
    return _line_figure(readers, loads, xlabel="同一个键的并发读者数",
                        ylabel="加载次数（模型调用）", title="加载次数与并发读者数",
                        log_y=True)


def plot_hit_ratio_vs_ttl(ttls: Sequence[float], ratios: Mapping[str, Sequence[float]]) -> Figure:
    """Hit ratio of a simulated read workload for each TTL, one line per configuration."""
    return _line_figure(ttls, ratios, xlabel="TTL（秒）", ylabel="命中率",
                        title="命中率与 TTL", log_y=False)


def _check_series(xs: Sequence, series: Mapping[str, Sequence]) -> None:
    if not xs or not series:
        raise ValueError("nothing to plot: give at least one x value and one series")
    for label, ys in series.items():
        if len(ys) != len(xs):
            raise ValueError(f"series {label!r} has {len(ys)} values for {len(xs)} x values")


def plot_retry_times(schedules: Mapping[str, Sequence[float]], *, width: float = 1.0) -> Figure:
    """Histograms of when retries start, one panel per schedule (e.g. without / with jitter).

    `schedules` maps a label to retry start times in seconds; `width` is the bucket size.
    The panels share both axes, so a tall spike and a spread-out hill compare at a glance.
    """
    if not schedules or any(len(times) == 0 for times in schedules.values()):
        raise ValueError("nothing to plot: give at least one non-empty schedule")
    width = check_seconds(width, "width")
    end = max(max(times) for times in schedules.values())
    bins = [i * width for i in range(int(end // width) + 2)]
    fig = Figure(figsize=(6.4, 2.4 * len(schedules)))
    axes = fig.subplots(len(schedules), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    for ax, (label, times) in zip(axes, schedules.items(), strict=True):
        ax.hist(times, bins=bins, color="tab:blue", alpha=0.8)
        ax.set_title(label, fontsize=10)
        ax.set_ylabel(f"每 {width:g} 秒的重试数")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("同时失败之后经过的秒数")
    fig.tight_layout()
    return fig
