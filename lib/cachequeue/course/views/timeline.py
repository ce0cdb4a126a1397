"""Who ran what, when: attempts per worker as a table and as a Gantt-style figure.

`attempts(conn, since)` reads every attempt row with times in seconds since `since` (a
datetime, e.g. the moment a notebook section began). `plot_timeline(frame, marks, since)`
draws one lane per worker, one bar per attempt coloured by its outcome (an expired
attempt's bar ends where its lease ended), the red X of a refused late report, and the
signals a notebook sent (`Fleet.marks`: SIGKILL a black cross, SIGSTOP/SIGCONT/SIGTERM
labelled marks, a stop until its SIGCONT a grey pause) and server restarts (a mark with
worker None: a dotted line across every lane) on top: the course's one vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from matplotlib.figure import Figure

from ... import sqlfile
from ...checks import check_instance
from .eventlanes import SPAN_KINDS, Band, Chart, Mark, Span
from .eventlanes import draw_chart as draw

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLOURS", "attempts", "chart", "plot_timeline"]

COLOURS = {**{o: SPAN_KINDS[o].colour
              for o in ("done", "expired", "released", "retry", "failed", "cancelled")},
           None: SPAN_KINDS["running"].colour}
"""outcome -> colour (None: still running), the course's one vocabulary."""


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
    (a worker with --concurrency above 1) go to different slots, greedily (what
    `lanes.layout` does for the figure)."""
    ends: dict[str, list[float]] = {}
    chosen = []
    for row in frame.itertuples():
        free = ends.setdefault(row.worker, [])
        end = last if _value(row.end) is None else row.end
        slot = next((i for i, e in enumerate(free) if e <= row.start), len(free))
        free[slot:slot + 1] = [end]
        chosen.append((row.worker, slot))
    return [(slot, len(ends[worker])) for worker, slot in chosen]


_SIGNALS = {"SIGKILL": "kill"}  # every other signal is a "signal" mark


def chart(frame: pd.DataFrame, marks: Iterable[dict[str, Any]] = (), *, since: datetime,
          title: str = "每个工作者的尝试") -> Chart:
    """The lanes of `plot_timeline` (one per worker, attempts stacked when they overlap)."""
    if frame.empty:
        raise ValueError("nothing to plot: no attempts")
    marks = [dict(m, t=_seconds(m["at"], since)) for m in marks if m["at"] >= since]
    last = max([e for e in frame["end"] if _value(e) is not None] + list(frame["start"]) +
               [m["t"] for m in marks])
    span = max(last, 1e-3)
    spans, points, bands = [], [], []
    for row in frame.itertuples():
        end = last if _value(row.end) is None else row.end
        outcome = _value(row.outcome)
        spans.append(Span(row.worker, row.start, max(end, row.start + span / 200),
                          outcome if outcome in COLOURS and outcome else "running",
                          detail=f"任务 {row.job_id} 第 {row.attempt} 次尝试，{row.worker}，"
                                 f"{row.start:g}–{end:g} 秒，{outcome or 'running'}"))
        if _value(row.rejected_at) is not None:
            points.append(Mark(row.worker, row.rejected_at, "", "refused",
                               detail=f"任务 {row.job_id} 第 {row.attempt} 次尝试迟到的报告"
                                      f"（{_value(row.rejected)}）被拒绝"))
    stopped: dict[str, float] = {}
    for m in sorted(marks, key=lambda m: m["t"]):
        if m["worker"] is None:
            bands.append(Band(m["t"], m["t"], m["signal"], "fault", detail=m["signal"]))
            continue
        points.append(Mark(m["worker"], m["t"], "" if m["signal"] == "SIGKILL" else m["signal"],
                           _SIGNALS.get(m["signal"], "signal"),
                           detail=f"{m['signal']} → {m['worker']}（{m['t']:g} 秒）"))
        if m["signal"] == "SIGSTOP":
            stopped[m["worker"]] = m["t"]
        elif m["signal"] == "SIGCONT" and m["worker"] in stopped:
            spans.append(Span(m["worker"], stopped.pop(m["worker"]), m["t"], "pause",
                              detail=f"{m['worker']} 暂停"))
    lanes = sorted({w for w in frame["worker"] if w is not None} |
                   {m["worker"] for m in marks if m["worker"] is not None})
    return Chart(title, spans, points, bands, lanes=list(reversed(lanes)), xlabel="秒",
                 stack=True)


def plot_timeline(frame: pd.DataFrame, marks: Iterable[dict[str, Any]] = (), *,
                  since: datetime, title: str = "每个工作者的尝试") -> Figure:
    """The Gantt-style figure of `frame` (from attempts()) with `marks` on top.

    A mark is {"at": datetime, "worker": name or None, "signal": "SIGKILL" | ... | label};
    one with worker None (a server restart) is a dotted line across every lane; a SIGSTOP
    and the SIGCONT after it are a grey pause behind the worker's lane. Drawn in the
    course's one vocabulary (`views.eventlanes`); `chart(...)` gives the same lanes for
    the interactive view.
    """
    return draw(chart(frame, marks, since=since, title=title), width=7.5, legend=True,
                row_height=0.6)
