"""The delete-after-write race of chapter 02, as its cells step it: a log the cells write as
they go, and its picture.

Each `note` records who did what, the manual clock's reading, the version the cache holds
for the document afterwards (None: nothing), and the document's current version. The
picture has one lane per actor and a lane for the cache, whose bar is red while it holds a
version older than the document's current one. The x axis is the order of the notes (the
race happens at one instant of the manual clock; the TTL's end is 30 s later), each tick
labelled with its step number and the clock's reading.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...checks import check_callable, check_int, check_text
from .eventlanes import Mark, Span, draw_lanes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["CACHE", "RaceLog"]

CACHE = "缓存里的条目"


@dataclass
class RaceLog:
    """Notes of one run, in order; `clock` is the run's manual clock (a callable)."""

    clock: Callable[[], float]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_callable(self.clock, "clock")

    def note(self, who: str, what: str, *, cached: int | None, current: int) -> None:
        """`who` did `what`; afterwards the cache holds version `cached` (None: nothing)
        and the document's current version is `current`."""
        check_text(who, "who", limit=20)
        check_text(what, "what", limit=40)
        if cached is not None:
            check_int(cached, "cached", minimum=1)
        check_int(current, "current", minimum=1)
        self.rows.append({"step": len(self.rows) + 1, "at": float(self.clock()), "who": who,
                          "what": what, "cached": cached, "current": current})

    def frame(self) -> pd.DataFrame:
        """The notes as a DataFrame: step, at, who, what, cached, current, stale."""
        import pandas as pd

        frame = pd.DataFrame(self.rows)
        frame["cached"] = frame["cached"].astype("Int64")
        frame["stale"] = (frame["cached"] < frame["current"]).fillna(False).astype(bool)
        return frame

    def draw(self, title: str = "先写库、再删缓存：旧请求把旧版本写回来", *,
             cache_lane: str = CACHE) -> Figure:
        """The lanes of the notes' actors, then `cache_lane` (what a new request would be
        served: red while older than the document's current version)."""
        check_text(title, "title")
        check_text(cache_lane, "cache_lane", limit=20)
        if not self.rows:
            raise ValueError("nothing noted yet")
        spans, marks, lanes = [], [], []
        for row in self.rows:
            if row["who"] not in lanes:
                lanes.append(row["who"])
            marks.append(Mark(row["who"], row["step"], row["what"],
                              "refused" if "写回" in row["what"] else "event"))
        last = self.rows[-1]["step"] + 0.6
        runs: list[list[dict[str, Any]]] = []  # consecutive notes with the same holding
        for row in self.rows:
            same = runs and (runs[-1][-1]["cached"], runs[-1][-1]["current"]) == (
                row["cached"], row["current"])
            if same:
                runs[-1].append(row)
            else:
                runs.append([row])
        for run, following in zip(runs, [*runs[1:], None], strict=True):
            cached, current = run[0]["cached"], run[0]["current"]
            if cached is None:
                continue
            end = following[0]["step"] if following is not None else last
            stale = cached < current
            spans.append(Span(cache_lane, run[0]["step"], end, "stale" if stale else "fresh",
                              f"版本 {cached}" + ("（旧）" if stale else "")))
        fig = draw_lanes(spans, marks, title=title, lanes=[*lanes, cache_lane],
                         xlabel="步骤（下面一行是手动时钟的读数）", width=8.0)
        ax = fig.axes[0]
        ax.set_xticks([r["step"] for r in self.rows],
                      [f"{r['step']}\n{r['at']:g} 秒" for r in self.rows])
        ax.set_xlim(0.3, last + 0.1)
        return fig
