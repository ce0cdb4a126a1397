"""Kleppmann's timeline as it ran: two lock holders, the pause, the tokens, the refused write.

    track = FenceTrack()
    track.acquired("A", a.fence)            # as each step of the cell happens
    track.expired("A")
    track.acquired("B", b.fence)
    track.wrote("B", b.fence, by_b)
    track.wrote("A", a.fence, by_a)
    plot_fencing(track)

Each note takes the time it is made (`time.monotonic()` unless a clock is given), so the
figure is the run's own order and spacing, in milliseconds since the first note. A holder's
lane shows its hold as a bar (from its acquisition to its expiry or release, or to the last
note), its token beside the acquisition, and each write as a marker: a filled circle for an
accepted write, an X for a refused one; a fault of the lock service (`track.fault(label)`)
is a dotted line across every lane and ends every hold still open. Drawn in the course's
one vocabulary (`views.eventlanes`: a hold is a lease bar, a refused write the red X of
every refused report). The cell asserts the facts the figure shows (`track.order()`,
`track.refused()`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from matplotlib.figure import Figure

from ...checks import check_bool, check_callable, check_int, check_text
from .eventlanes import Band, Chart, Mark, Span
from .eventlanes import draw_chart as draw

__all__ = ["FenceEvent", "FenceTrack", "chart", "plot_fencing"]

KINDS = ("acquired", "expired", "released", "wrote", "fault")
MAX_EVENTS = 100


@dataclass(frozen=True)
class FenceEvent:
    """One step: who, what (`KINDS`), when (seconds on the track's clock), the token, and
    for a write whether the resource accepted it."""

    holder: str
    kind: str
    at: float
    fence: int | None = None
    accepted: bool | None = None


@dataclass
class FenceTrack:
    """The notes of one run, in the order they were made."""

    clock: Callable[[], float] = time.monotonic
    events: list[FenceEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_callable(self.clock, "clock")

    def _note(self, holder: str, kind: str, fence: int | None = None,
              accepted: bool | None = None) -> None:
        check_text(holder, "holder" if kind != "fault" else "label", limit=20)
        if len(self.events) >= MAX_EVENTS:
            raise ValueError(f"a fencing track keeps at most {MAX_EVENTS} events")
        self.events.append(FenceEvent(holder, kind, float(self.clock()), fence, accepted))

    def acquired(self, holder: str, fence: int) -> None:
        """`holder` got the lock with token `fence`."""
        self._note(holder, "acquired", check_int(fence, "fence", minimum=1))

    def expired(self, holder: str) -> None:
        """`holder`'s hold ran out (it does not know: it is paused)."""
        self._note(holder, "expired")

    def released(self, holder: str) -> None:
        """`holder` released its lock."""
        self._note(holder, "released")

    def wrote(self, holder: str, fence: int, accepted: bool) -> None:
        """`holder` wrote with token `fence`; `accepted` is what the resource answered."""
        self._note(holder, "wrote", check_int(fence, "fence", minimum=1),
                   check_bool(accepted, "accepted"))

    def fault(self, label: str) -> None:
        """Something that happened to the lock service itself (e.g. "Redis 重启"): every
        hold still open ends here, drawn as a line across all lanes."""
        self._note(label, "fault")

    def order(self) -> list[tuple[str, str]]:
        """(holder, kind) in the order they happened."""
        return [(e.holder, e.kind) for e in self.events]

    def refused(self) -> list[tuple[str, int]]:
        """(holder, token) of every refused write."""
        return [(e.holder, e.fence) for e in self.events if e.kind == "wrote" and not e.accepted]

    def holds(self) -> dict[str, list[tuple[float, float, int]]]:
        """Per holder, its holds as (start, end, token) in seconds since the first note; a
        hold that was never ended lasts until the last note."""
        if not self.events:
            return {}
        t0, last = self.events[0].at, self.events[-1].at
        out: dict[str, list[tuple[float, float, int]]] = {}
        open_: dict[str, tuple[float, int]] = {}
        for e in self.events:
            if e.kind == "acquired":
                open_[e.holder] = (e.at - t0, e.fence)
            elif e.kind in ("expired", "released") and e.holder in open_:
                start, fence = open_.pop(e.holder)
                out.setdefault(e.holder, []).append((start, e.at - t0, fence))
            elif e.kind == "fault":
                for holder, (start, fence) in open_.items():
                    out.setdefault(holder, []).append((start, e.at - t0, fence))
                open_.clear()
        for holder, (start, fence) in open_.items():
            out.setdefault(holder, []).append((start, last - t0, fence))
        return out


def chart(track: FenceTrack, *, title: str = "暂停的持有者与防护令牌") -> Chart:
    """The lanes of the module docstring, in milliseconds since the first note."""
    if not any(e.kind == "acquired" for e in track.events):
        raise ValueError("nothing to plot: the track has no acquisition")
    t0 = track.events[0].at
    holders = list(dict.fromkeys(e.holder for e in track.events if e.kind != "fault"))
    spans = [Span(holder, start * 1000, end * 1000, "lease", f"令牌 {fence}",
                  detail=f"持有者 {holder} 持有锁，令牌 {fence}")
             for holder, holds in track.holds().items() for start, end, fence in holds]
    marks, bands = [], []
    for e in track.events:
        x = (e.at - t0) * 1000
        if e.kind == "fault":
            bands.append(Band(x, x, e.holder, "fault", detail=e.holder))
        elif e.kind == "acquired":
            marks.append(Mark(e.holder, x, "", "claim", detail=f"{e.holder} 加锁，令牌 {e.fence}"))
        elif e.kind == "expired":
            marks.append(Mark(e.holder, x, "锁过期（持有者停顿中）", "expiry",
                              detail=f"{e.holder} 的锁过期，它自己并不知道"))
        elif e.kind == "released":
            marks.append(Mark(e.holder, x, "释放", "event", detail=f"{e.holder} 释放锁"))
        elif e.kind == "wrote":
            word, kind = ("写入被接受", "accepted") if e.accepted else ("写入被拒绝", "refused")
            marks.append(Mark(e.holder, x, f"{word}（令牌 {e.fence}）", kind,
                              detail=f"{e.holder} 带令牌 {e.fence} 写入：{word}"))
    return Chart(title, spans, marks, bands, lanes=holders,
                 lane_labels={h: f"持有者 {h}" for h in holders},
                 xlabel="毫秒（从第一次加锁起，本次运行的实测时刻）")


def plot_fencing(track: FenceTrack, *, title: str = "暂停的持有者与防护令牌") -> Figure:
    """The figure of the module docstring."""
    return draw(chart(track, title=title), width=8, legend=True, row_height=0.9)
