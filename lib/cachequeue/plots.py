"""Matplotlib figures for the notebooks. Each function returns the Figure it draws."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

__all__: list[str] = ["plot_hit_ratio_vs_ttl", "plot_loads_vs_readers", "plot_retry_times"]


def plot_loads_vs_readers(readers: Sequence[int], loads: Mapping[str, Sequence[int]]) -> Figure:
    """Loads caused by N concurrent readers of one cold key, one line per cache.

    `loads` maps a label (e.g. "with coalescing") to the load count for each value of
    `readers`. Log-log, so "one load" and "one load per reader" are both straight lines.
    """
    _check_series(readers, loads)
    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    for (label, counts), marker in zip(loads.items(), "os^v", strict=False):
        ax.plot(readers, counts, marker=marker, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("concurrent readers of one key")
    ax.set_ylabel("loads (model calls)")
    ax.set_title("Loads vs concurrent readers")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_hit_ratio_vs_ttl(ttls: Sequence[float], ratios: Mapping[str, Sequence[float]]) -> Figure:
    """Hit ratio of a simulated read workload for each TTL, one line per configuration."""
    _check_series(ttls, ratios)
    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    for (label, values), marker in zip(ratios.items(), "os^v", strict=False):
        ax.plot(ttls, values, marker=marker, label=label)
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("TTL (seconds)")
    ax.set_ylabel("hit ratio")
    ax.set_title("Hit ratio vs TTL")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


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
    if not width > 0:
        raise ValueError(f"width must be > 0, got {width!r}")
    end = max(max(times) for times in schedules.values())
    bins = [i * width for i in range(int(end // width) + 2)]
    fig = Figure(figsize=(6.4, 2.4 * len(schedules)))
    axes = fig.subplots(len(schedules), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    for ax, (label, times) in zip(axes, schedules.items(), strict=True):
        ax.hist(times, bins=bins, color="tab:blue", alpha=0.8)
        ax.set_title(label, fontsize=10)
        ax.set_ylabel(f"retries per {width:g} s")
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("seconds after the jobs failed together")
    fig.tight_layout()
    return fig
