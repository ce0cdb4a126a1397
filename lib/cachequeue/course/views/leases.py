"""A lease timeline: per worker, the lease it held as a bar, renewals, the takeover, refused reports.

    plot_leases([Lease("a", 0, 65, renewals=((20, 50), (35, 65))), Lease("b", 65, 95)],
                refused=[("a", 65, "续租被拒绝")])

Times are seconds on the chapter's manual clock since a moment the cell chooses. A lease is
drawn from its claim to its last end; each renewal is a tick at the moment it was made with
the end it moved the lease to, and the ends it replaced are dashed lines. The cell computes
every number from the run and asserts the facts the figure shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ...checks import check_finite, check_text
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["Lease", "plot_leases"]


@dataclass(frozen=True)
class Lease:
    """A worker's lease: claimed at `start`, first ending at `end` unless renewed; each
    renewal is (when, new end)."""

    worker: str
    start: float
    end: float
    renewals: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        check_text(self.worker, "worker")
        check_finite(self.start, "start")
        check_finite(self.end, "end")
        if self.end <= self.start:
            raise ValueError(f"a lease ends after it starts, got start={self.start}, end={self.end}")
        last = self.end
        for at, new_end in self.renewals:
            if not self.start <= at <= last or new_end < last:
                raise ValueError(f"a renewal at {at} to {new_end} must fall inside the lease and extend it")
            last = new_end

    @property
    def last_end(self) -> float:
        """Where the lease ends after its last renewal."""
        return self.renewals[-1][1] if self.renewals else self.end


def plot_leases(leases: Sequence[Lease], refused: Iterable[tuple[str, float, str]] = (), *,
                title: str = "租约、续租与接手") -> Figure:
    """The figure of the module docstring; `refused` marks (worker, at, label) with an X."""
    if not leases:
        raise ValueError("nothing to plot: give at least one lease")
    refused = list(refused)
    lanes = list(dict.fromkeys([lease.worker for lease in leases] + [w for w, _, _ in refused]))
    y = {w: len(lanes) - 1 - i for i, w in enumerate(lanes)}
    fig = Figure(figsize=(7.5, 0.8 * len(lanes) + 1.6))
    ax = fig.subplots()
    for lease in leases:
        row = y[lease.worker]
        ax.broken_barh([(lease.start, lease.last_end - lease.start)], (row - 0.25, 0.5),
                       facecolors="tab:blue", alpha=0.35, edgecolor="tab:blue")
        ax.plot(lease.start, row, marker="o", color="tab:blue")
        ends = [lease.end] + [new_end for _, new_end in lease.renewals]
        for old_end in ends[:-1]:
            ax.plot([old_end, old_end], [row - 0.3, row + 0.3], linestyle="--", color="gray")
        for at, new_end in lease.renewals:
            ax.plot(at, row + 0.32, marker="v", color="tab:green")
            ax.text(at, row + 0.38, f"续租→{new_end:g}", ha="center", va="bottom", fontsize=7)
    for worker, at, label in refused:
        ax.plot(at, y[worker], marker="X", color="red", markersize=10, linestyle="none")
        ax.text(at, y[worker] - 0.35, label, ha="center", va="top", fontsize=7, color="red")
    ax.set_yticks([y[w] for w in lanes], [f"工作者 {w}" for w in lanes])
    ax.set_ylim(-0.8, len(lanes) - 0.2 + 0.4)
    ax.set_xlabel("秒（手动时钟）")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    handles = [Patch(color="tab:blue", alpha=0.35, label="持有租约"),
               Line2D([], [], marker="o", color="tab:blue", linestyle="none", label="领取"),
               Line2D([], [], marker="v", color="tab:green", linestyle="none", label="续租"),
               Line2D([], [], linestyle="--", color="gray", label="被续租替换的终点")]
    if refused:
        handles.append(Line2D([], [], marker="X", color="red", linestyle="none", label="被拒绝"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig
