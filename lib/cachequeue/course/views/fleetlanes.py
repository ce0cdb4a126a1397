"""Lease timelines of real worker processes: one lane per worker, each lease a bar, its
renewals, the takeover and the refused late report, from the run's own records.

    fleetlanes.record(conn)                      # once, on the chapter's schema
    ...                                          # run an experiment with Fleet workers
    run = fleetlanes.story(conn, since, [job])   # what the tables recorded
    fleetlanes.takeovers(run)                    # facts for the cell's asserts
    fleetlanes.plot(run, fleet.marks, title="SIGKILL 之后")

`record` adds a row trigger to the schema's `jobs` table (SQL in `sql/fleetlanes.sql`): every
claim and every renewal sets `locked_until` on a running job, and the trigger keeps the
attempt, the holder, the moment (database clock) and the new end in `lease_log`. `story`
joins those leases to the attempt rows (`job_attempts`: start, end, outcome, a refused late
report), with every time in seconds since `since`. The figure draws, per attempt, the lease
window (light, from the claim to the last end it was given), the attempt itself (dark, from
its start to its end, coloured by outcome as in `timeline`), a tick per renewal, an arrow
from the end of a lost lease to the attempt that took the job over, a cross where a late
report was refused, and the signals the notebook sent (`Fleet.marks`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ... import sqlfile
from ...checks import check_instance, check_text
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)
from .timeline import COLOURS

__all__ = ["OUTCOMES", "Attempt", "Story", "plot", "record", "story", "takeovers"]

MAX_JOBS = 100
"""A lease timeline is about a few jobs; more would not be readable."""

OUTCOMES = {"done": "完成", "expired": "租约过期", "released": "交还", "retry": "失败，待重试",
            "failed": "失败", "cancelled": "取消", None: "进行中"}
"""The Chinese legend of an attempt's outcome (the colours are timeline.COLOURS)."""

MARKS = {"SIGKILL": ("X", "red"), "SIGSTOP": ("v", "tab:purple"), "SIGCONT": ("^", "tab:purple"),
         "SIGTERM": ("s", "tab:brown"), "SIGINT": ("s", "tab:brown")}
"""A signal's marker and colour, as in the chapter's whole timeline (timeline.plot_timeline)."""


@dataclass(frozen=True)
class Attempt:
    """One attempt at one job: times in seconds since the story's `since`; `leases` are
    (given at, new end) in order, the claim's first, then each renewal's."""

    job_id: int
    attempt: int
    worker: str | None
    start: float
    end: float | None
    outcome: str | None
    rejected: str | None
    rejected_at: float | None
    leases: tuple[tuple[float, float], ...] = ()

    @property
    def lease_end(self) -> float | None:
        """The last end the lease was given (None if no lease was recorded)."""
        return self.leases[-1][1] if self.leases else None

    @property
    def renewals(self) -> tuple[tuple[float, float], ...]:
        """The leases given after the claim's: (renewed at, new end)."""
        return self.leases[1:]


@dataclass(frozen=True)
class Story:
    """The attempts of some jobs since `since`, in order of start."""

    since: datetime
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)

    def seconds(self, moment: datetime) -> float:
        """`moment` in the story's seconds."""
        check_instance(moment, "moment", datetime)
        return round((moment - self.since).total_seconds(), 3)

    def of(self, job_id: int) -> list[Attempt]:
        """The attempts of one job, in attempt order."""
        return sorted((a for a in self.attempts if a.job_id == job_id), key=lambda a: a.attempt)

    def worker(self, name: str) -> list[Attempt]:
        """The attempts one worker made, in order of start."""
        return [a for a in self.attempts if a.worker == name]


def record(conn: psycopg.Connection) -> None:
    """Start keeping every lease given on the schema of `conn` (idempotent)."""
    check_instance(conn, "conn", psycopg.Connection)
    conn.execute(sqlfile.load(__package__, "fleetlanes.sql")["record"].sql)


def _job_ids(jobs: Iterable[int]) -> list[int]:
    ids = list(jobs)
    if not ids or len(ids) > MAX_JOBS:
        raise ValueError(f"give between 1 and {MAX_JOBS} job ids, got {len(ids)}")
    for job_id in ids:
        if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id < 1:
            raise ValueError(f"a job id is a positive integer, got {job_id!r}")
    return ids


def story(conn: psycopg.Connection, since: datetime, jobs: Iterable[int] | None = None) -> Story:
    """The attempts of `jobs` started since `since`, each with the leases it was given;
    jobs None: every job with an attempt since `since` (ValueError if more than MAX_JOBS)."""
    check_instance(conn, "conn", psycopg.Connection)
    check_instance(since, "since", datetime)
    queries = sqlfile.load(__package__, "fleetlanes.sql")
    if jobs is None:
        jobs = [row[0] for row in conn.execute(queries["jobs_since"].sql,
                                               {"since": since, "limit": MAX_JOBS + 1})]
    ids = _job_ids(jobs)
    params = {"jobs": ids, "since": since}

    def seconds(value: datetime | None) -> float | None:
        return None if value is None else round((value - since).total_seconds(), 3)

    given: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for job_id, attempt, at, until in conn.execute(queries["leases"].sql, params).fetchall():
        given.setdefault((job_id, attempt), []).append((seconds(at), seconds(until)))
    attempts = tuple(
        Attempt(job_id, attempt, worker, seconds(started), seconds(finished), outcome, rejected,
                seconds(rejected_at), tuple(given.get((job_id, attempt), ())))
        for job_id, attempt, worker, started, finished, outcome, rejected, rejected_at
        in conn.execute(queries["attempts"].sql, params).fetchall())
    return Story(since, attempts)


def takeovers(run: Story) -> list[dict[str, Any]]:
    """Every attempt that took a job over from an attempt whose lease ran out or was handed
    back: {job, old, new (workers), outcome (the old attempt's), lease_end (the old
    attempt's last lease end), old_end (when the old attempt was closed), at (the new
    attempt's start)}."""
    check_instance(run, "run", Story)
    found = []
    for job_id in dict.fromkeys(a.job_id for a in run.attempts):
        chain = run.of(job_id)
        for old, new in zip(chain, chain[1:], strict=False):
            if old.outcome in ("expired", "released"):
                found.append({"job": job_id, "old": old.worker, "new": new.worker,
                              "outcome": old.outcome, "lease_end": old.lease_end,
                              "old_end": old.end, "at": new.start})
    return found


def _lanes(run: Story, marks: Sequence[dict[str, Any]]) -> list[str]:
    names = [a.worker or "?" for a in run.attempts] + [m["worker"] for m in marks if m["worker"]]
    return list(dict.fromkeys(names))


def _used(a: Attempt) -> float | None:
    """Where the lease window is drawn filled to: its last end, or the attempt's end if the
    attempt ended first (a finish or a hand-back gives the lease up; the rest is unused)."""
    if a.lease_end is None or a.end is None:
        return a.lease_end
    return min(a.lease_end, a.end)


def plot(run: Story, marks: Iterable[dict[str, Any]] = (), *, title: str,
         lanes: Sequence[str] | None = None, labels: bool = True) -> Figure:
    """The figure of the module docstring. `marks` are Fleet.marks (those before the story's
    `since`, and those of workers not in `lanes` when it is given, are left out). A lease
    given up before its end shows the unused rest as a dashed outline (not counted in the
    time axis); `labels` writes each attempt's job and number under it."""
    check_instance(run, "run", Story)
    check_text(title, "title")
    if not run.attempts:
        raise ValueError("nothing to plot: the story has no attempts")
    marks = [dict(m, t=run.seconds(m["at"])) for m in marks if m["at"] >= run.since]
    order = list(lanes) if lanes is not None else _lanes(run, marks)
    marks = [m for m in marks if m["worker"] is None or m["worker"] in order]
    unknown = {a.worker or "?" for a in run.attempts} - set(order)
    if unknown:
        raise ValueError(f"attempts of workers not in lanes: {sorted(unknown)}")
    row = {name: len(order) - 1 - i for i, name in enumerate(order)}
    ends = [t for a in run.attempts for t in (a.end, _used(a), a.rejected_at) if t is not None]
    last = max(ends + [a.start for a in run.attempts] + [m["t"] for m in marks])
    first = min([a.start for a in run.attempts] + [m["t"] for m in marks])
    span = max(last - first, 1e-3)

    fig = Figure(figsize=(7.5, (0.75 if len(order) <= 6 else 0.5) * len(order) + 1.9))
    ax = fig.subplots()
    for a in run.attempts:
        y = row[a.worker or "?"]
        colour = COLOURS.get(a.outcome, "tab:blue")
        end = last if a.end is None else a.end
        used = _used(a)
        if used is not None:  # the lease window: the claim to the last end it was given
            ax.broken_barh([(a.start, max(used - a.start, span / 300))], (y - 0.32, 0.64),
                           facecolors=colour, alpha=0.18, edgecolor=colour, linewidth=0.8)
            if a.lease_end is not None and a.lease_end > used:  # given up before its end
                ax.broken_barh([(used, a.lease_end - used)], (y - 0.32, 0.64), facecolors="none",
                               edgecolor=colour, linewidth=0.8, linestyle="--", alpha=0.6)
        ax.broken_barh([(a.start, max(end - a.start, span / 300))], (y - 0.12, 0.24),
                       facecolors=colour, edgecolor="none")
        if labels:
            ax.text(a.start + span / 200, y - 0.3, f"任务 {a.job_id} 第 {a.attempt} 次",
                    fontsize=6.5, va="bottom", color="dimgray")
        for at, _ in a.renewals:
            ax.plot([at, at], [y + 0.14, y + 0.3], color="tab:green", linewidth=1)
        if a.rejected_at is not None:
            ax.plot(a.rejected_at, y, marker="X", color="black", markersize=10, linestyle="none")
    for take in takeovers(run):
        if take["lease_end"] is None:
            continue
        old_end = take["lease_end"] if take["outcome"] == "expired" else take["old_end"]
        ax.annotate("", xy=(take["at"], row[take["new"] or "?"]),
                    xytext=(old_end, row[take["old"] or "?"]),
                    arrowprops={"arrowstyle": "->", "color": "tab:purple", "linewidth": 1.2,
                                "linestyle": "--"})
    for m in marks:
        if m["worker"] is None:
            ax.axvline(m["t"], color="gray", linestyle="--", linewidth=1)
            ax.text(m["t"], len(order) - 0.45, f" {m['signal']}", fontsize=8, color="gray")
        else:
            shape, colour = MARKS.get(m["signal"], ("o", "gray"))
            offset = -0.44 if m["signal"] in ("SIGSTOP", "SIGCONT") else 0.44
            ax.plot(m["t"], row[m["worker"]] + offset, marker=shape, color=colour, markersize=8,
                    linestyle="none")
    ax.set_yticks(range(len(order)), list(reversed([f"工作者 {n}" for n in order])))
    ax.set_ylim(-0.7, len(order) - 0.15)
    ax.set_xlim(first - 0.03 * span, last + 0.05 * span)
    ax.set_xlabel("秒（从本节开始算起）")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)

    outcomes = list(dict.fromkeys(a.outcome for a in run.attempts))
    handles: list[Any] = [Patch(facecolor="gray", alpha=0.18, edgecolor="gray", label="租约窗口"),
                          *([Patch(facecolor="none", edgecolor="gray", linestyle="--",
                                   label="交出时未用完的租约")]
                            if any(_used(a) != a.lease_end for a in run.attempts) else []),
                          *[Patch(color=COLOURS.get(o, "tab:blue"), label=f"尝试：{OUTCOMES.get(o, o)}")
                            for o in outcomes]]
    if any(a.renewals for a in run.attempts):
        handles.append(Line2D([], [], color="tab:green", marker="|", linestyle="none",
                              markersize=9, label="续租"))
    if takeovers(run):
        handles.append(Line2D([], [], color="tab:purple", linestyle="--", label="接手"))
    if any(a.rejected_at is not None for a in run.attempts):
        handles.append(Line2D([], [], marker="X", color="black", linestyle="none",
                              label="被拒绝的迟到报告"))
    for signal in dict.fromkeys(m["signal"] for m in marks if m["worker"] is not None):
        shape, colour = MARKS.get(signal, ("o", "gray"))
        handles.append(Line2D([], [], marker=shape, color=colour, linestyle="none", label=signal))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig
