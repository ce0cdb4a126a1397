"""Chapter 14's figures: the jobs table under a held horizon, and its size under churn.

    fig = bloat.plot_horizon(points)          # points from procs.horizonload.run
    fig = bloat.plot_churn(without, with_)    # [(jobs finished, table bytes), ...] twice

`plot_horizon` draws three panels over the jobs finished so far: the dead row versions the
round's VACUUM had to keep, the table's and its indexes' size, and the buffers one claim
touched; the rounds in which the horizon was held are shaded.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["plot_churn", "plot_horizon"]


def _held_span(points: Sequence) -> tuple[float, float] | None:
    held = [p for p in points if p.phase == "held"]
    if not held:
        return None
    start = max((p.jobs for p in points if p.jobs < held[0].jobs), default=0)
    return start, held[-1].jobs


def plot_horizon(points: Sequence, *, title: str = "视界被占住时的任务表") -> Figure:
    """Dead tuples kept, sizes (kB) and claim buffers against the jobs finished so far."""
    if not points:
        raise ValueError("give at least one point")
    x = [p.jobs for p in points]
    fig = Figure(figsize=(10, 3.2))
    dead, size, cost = fig.subplots(1, 3)
    dead.plot(x, [p.kept for p in points], marker="o", color="tab:red")
    dead.set_title("VACUUM 无法清除的死元组")
    size.plot(x, [p.table_bytes / 1024 for p in points], marker="o", label="表")
    size.plot(x, [p.index_bytes / 1024 for p in points], marker="s", label="索引")
    size.set_title("大小（kB）")
    size.legend()
    measured = [p for p in points if p.claim_buffers is not None]
    cost.plot([p.jobs for p in measured], [p.claim_buffers for p in measured], marker="o",
              color="tab:purple")
    cost.set_title("一次领取读到的缓冲页")
    span = _held_span(points)
    for ax in (dead, size, cost):
        if span:
            ax.axvspan(*span, color="tab:orange", alpha=0.15)
        ax.set_xlabel("已完成的任务数")
        ax.grid(True, alpha=0.3)
    fig.suptitle(title + "（橙色：视界被占住）")
    fig.tight_layout()
    return fig


def plot_churn(series: dict[str, Sequence[tuple[int, int]]], *,
               title: str = "持续进出的任务与表的大小") -> Figure:
    """One line per named series of (jobs finished, table bytes)."""
    if not series:
        raise ValueError("give at least one series")
    fig = Figure(figsize=(6, 3.2))
    ax = fig.subplots()
    for name, points in series.items():
        ax.plot([j for j, _ in points], [b / 1024 for _, b in points], marker="o", label=name)
    ax.set_xlabel("已完成的任务数")
    ax.set_ylabel("表的大小（kB）")
    ax.set_title(title)
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
