"""Who ran what, when: attempts per worker as a table and as a Gantt-style figure.

`attempts(conn, since)` reads every attempt row with times in seconds since `since` (a
datetime, e.g. the moment a notebook section began). `plot_timeline(frame, marks, since)`
draws one lane per worker, one bar per attempt coloured by its outcome (an expired
attempt's bar ends where its lease ended), a cross where a late report was refused, and
the signals a notebook sent (`Fleet.marks`: SIGKILL, SIGSTOP, SIGCONT, SIGTERM) and server
restarts (a mark with worker None) on top.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ... import sqlfile
from ...checks import check_instance
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLOURS", "attempts", "plot_timeline"]

COLOURS = {"done": "tab:green", "expired": "tab:red", "released": "tab:orange",
           "retry": "tab:olive", "failed": "black", "cancelled": "tab:gray", None: "tab:blue"}
_MARKS = {"SIGKILL": ("X", "red"), "SIGSTOP": ("v", "tab:purple"),
          "SIGCONT": ("^", "tab:purple"), "SIGTERM": ("s", "tab:brown"),
          "SIGINT": ("s", "tab:brown")}


def _seconds(value: datetime | None, since: datetime) -> float | None:
    return None if value is None else round((value - since).total_seconds(), 3)


def attempts(conn: psycopg.Connection, since: datetime) -> pd.DataFrame:
    """One row per attempt started since `since`: job_id, attempt, worker, start, end (None while running),
    outcome, rejected ('finish'/'fail' when a late report was refused) and rejected_at;
    times in seconds since `since`."""
    import pandas as pd

    check_instance(since, "since", datetime)
    rows = conn.execute(sqlfile.load(__package__, "timeline.sql")["attempts"].sql,
                        {"since": since}).fetchall()
    frame = pd.DataFrame(
        [{"job_id": job, "attempt": attempt, "worker": worker,
          "start": _seconds(started, since), "end": _seconds(finished, since),
          "outcome": outcome, "rejected": rejected, "rejected_at": _seconds(rejected_at, since)}
         for job, attempt, worker, started, finished, outcome, rejected, rejected_at in rows],
        columns=["job_id", "attempt", "worker", "start", "end", "outcome", "rejected",
                 "rejected_at"])
    return frame.astype(object).where(frame.notna(), None)


def _value(value: Any) -> Any:
    """None for a missing value (None or NaN, whichever pandas chose)."""
    return None if value is None or value != value else value


def _slots(frame: pd.DataFrame, last: float) -> list[tuple[int, int]]:
    """(slot, slots of its worker) per row: attempts of one worker that overlap in time
    (a worker with --concurrency above 1) go to different slots, greedily."""
    ends: dict[str, list[float]] = {}
    chosen = []
    for row in frame.itertuples():
        free = ends.setdefault(row.worker, [])
        end = last if _value(row.end) is None else row.end
        slot = next((i for i, e in enumerate(free) if e <= row.start), len(free))
        free[slot:slot + 1] = [end]
        chosen.append((row.worker, slot))
    return [(slot, len(ends[worker])) for worker, slot in chosen]


def plot_timeline(frame: pd.DataFrame, marks: Iterable[dict[str, Any]] = (), *,
                  since: datetime, title: str = "每个工作者的尝试") -> Figure:
    """The Gantt-style figure of `frame` (from attempts()) with `marks` on top.

    A mark is {"at": datetime, "worker": name or None, "signal": "SIGKILL" | ... | label};
    one with worker None (a server restart) is a dashed line across every lane.
    """
    if frame.empty:
        raise ValueError("nothing to plot: no attempts")
    marks = [dict(m, t=_seconds(m["at"], since)) for m in marks if m["at"] >= since]
    lanes = sorted({w for w in frame["worker"] if w is not None} |
                   {m["worker"] for m in marks if m["worker"] is not None})
    y = {name: i for i, name in enumerate(lanes)}
    last = max([e for e in frame["end"] if _value(e) is not None] + list(frame["start"]) +
               [m["t"] for m in marks])
    span = max(last, 1e-3)
    fig = Figure(figsize=(7.5, 0.6 * len(lanes) + 1.8))
    ax = fig.subplots()
    for row, (slot, slots) in zip(frame.itertuples(), _slots(frame, last), strict=True):
        end = last if _value(row.end) is None else row.end
        height = 0.6 / slots  # a worker running jobs side by side gets one thin row per slot
        bottom = y[row.worker] - 0.3 + slot * height
        ax.broken_barh([(row.start, max(end - row.start, span / 200))], (bottom, height),
                       facecolors=COLOURS.get(_value(row.outcome), "tab:blue"), edgecolor="white",
                       linewidth=0.5)
        if _value(row.rejected_at) is not None:
            ax.plot(row.rejected_at, bottom + height / 2, marker="x", color="black",
                    markersize=9, markeredgewidth=2)
    for m in marks:
        if m["worker"] is None:
            ax.axvline(m["t"], color="gray", linestyle="--", linewidth=1)
            ax.text(m["t"], len(lanes) - 0.45, f" {m['signal']}", fontsize=8, color="gray")
        else:
            shape, colour = _MARKS.get(m["signal"], ("o", "gray"))
            # Pauses below the lane, the rest above, so a SIGCONT and a SIGTERM sent
            # moments apart stay visible.
            offset = -0.42 if m["signal"] in ("SIGSTOP", "SIGCONT") else 0.42
            ax.plot(m["t"], y[m["worker"]] + offset, marker=shape, color=colour,
                    markersize=9, linestyle="none")
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(-0.65, len(lanes) - 0.2)
    ax.set_xlabel("秒")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    outcomes = {_value(o) for o in frame["outcome"]}
    present = [o for o in COLOURS if o in outcomes]
    handles = [Patch(color=COLOURS[o], label=o or "running") for o in present]
    if any(_value(t) is not None for t in frame["rejected_at"]):
        handles.append(Line2D([], [], marker="x", color="black", linestyle="none",
                              label="被拒绝的迟到报告"))
    for signal in dict.fromkeys(m["signal"] for m in marks if m["worker"] is not None):
        shape, colour = _MARKS.get(signal, ("o", "gray"))
        handles.append(Line2D([], [], marker=shape, color=colour, linestyle="none", label=signal))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig
