"""A lease timeline: per worker, the lease it held as a bar, renewals, the takeover, refused reports.

    plot_leases([Lease("a", 0, 65, renewals=((20, 50), (35, 65))), Lease("b", 65, 95)],
                refused=[("a", 65, "续租被拒绝")])

Times are seconds on the chapter's manual clock since a moment the cell chooses. A lease is
drawn from its claim to its last end; each renewal is a mark at the moment it was made with
the end it moved the lease to, and the ends it replaced are dashed ticks; a lease that began
on another lane after the one before it ended is a takeover. Drawn in the course's one
vocabulary (`views.eventlanes`); `chart(...)` gives the lanes for the interactive view. The cell computes
every number from the run and asserts the facts the figure shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure

from ...checks import check_finite, check_text
from .eventlanes import Chart, Mark, Span
from .eventlanes import draw_chart as draw

__all__ = ["Lease", "chart", "plot_leases"]


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


def chart(leases: Sequence[Lease], refused: Iterable[tuple[str, float, str]] = (), *,
          title: str = "租约、续租与接手") -> Chart:
    """The lanes of the module docstring: a lease bar per lease, a claim where it began, a
    renewal mark per renewal and a dashed tick per end it replaced, a takeover where a lease
    began on a lane other than the one before it, and `refused` (worker, at, label)."""
    if not leases:
        raise ValueError("nothing to plot: give at least one lease")
    refused = list(refused)
    spans, marks = [], []
    previous = None
    for lease in sorted(leases, key=lambda lease: lease.start):
        spans.append(Span(lease.worker, lease.start, lease.last_end, "lease",
                          detail=f"工作者 {lease.worker} 持有租约 {lease.start:g}–{lease.last_end:g} 秒"))
        taken = previous is not None and previous.worker != lease.worker \
            and lease.start >= previous.last_end
        marks.append(Mark(lease.worker, lease.start, "接手" if taken else "",
                          "takeover" if taken else "claim", detail=f"领取于 {lease.start:g} 秒"))
        ends = [lease.end] + [new_end for _, new_end in lease.renewals]
        marks += [Mark(lease.worker, old_end, "", "replaced", detail=f"原定的终点 {old_end:g} 秒")
                  for old_end in ends[:-1]]
        marks += [Mark(lease.worker, at, f"续租→{new_end:g}", "renewal",
                       detail=f"{at:g} 秒续租，租约延到 {new_end:g} 秒")
                  for at, new_end in lease.renewals]
        previous = lease
    marks += [Mark(worker, at, label, "refused", detail=f"{label}（{at:g} 秒）")
              for worker, at, label in refused]
    lanes = list(dict.fromkeys([lease.worker for lease in leases] + [w for w, _, _ in refused]))
    return Chart(title, spans, marks, lanes=lanes, xlabel="秒（手动时钟）",
                 lane_labels={w: f"工作者 {w}" for w in lanes})


def plot_leases(leases: Sequence[Lease], refused: Iterable[tuple[str, float, str]] = (), *,
                title: str = "租约、续租与接手") -> Figure:
    """The figure of the module docstring; `refused` marks (worker, at, label) with an X."""
    return draw(chart(leases, refused, title=title), width=7.5, legend=True, row_height=0.8)
