"""Matplotlib figures for the notebooks. Each function returns the Figure it draws."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

__all__: list[str] = ["plot_hit_ratio_vs_ttl", "plot_loads_vs_readers"]


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
