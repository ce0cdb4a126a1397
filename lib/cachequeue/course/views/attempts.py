"""One job's attempts from its attempt rows: who ran it when, the side effect each run made, the refused report.

    shown = attempts.from_history(jobs.history(conn, job_id), lease=30)
    attempts.plot_attempts(shown)

`from_history` turns `jobs.history` rows into `Attempt`s in seconds since the first claim
(the rows' `started_at`, `finished_at` and `rejected_at`, read on the chapter's frozen
database clock). The figure has one lane per worker: the lease window of each attempt as a
bar (claim to claim + `lease`), a star where the attempt ran the handler (the side effect,
e.g. a model call: a handler runs right after its claim), a filled circle where the result
was stored, and an X where a late report was refused: the course's one vocabulary
(`views.eventlanes`). The cell asserts the facts the figure shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from ...checks import check_seconds
from .eventlanes import Chart, Mark, Span
from .eventlanes import draw_chart as draw

__all__ = ["Attempt", "chart", "from_history", "plot_attempts"]

MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class Attempt:
    """One attempt in seconds since the job's first claim."""

    worker: str
    attempt: int
    start: float
    lease_end: float
    finished: float | None
    outcome: str | None
    refused_at: float | None


def from_history(rows: Iterable[Mapping[str, Any]], *, lease: float) -> list[Attempt]:
    """`jobs.history` rows of one job as Attempts; `lease` is the seconds each claim asked."""
    lease = check_seconds(lease, "lease")
    rows = list(rows)
    if not rows:
        raise ValueError("no attempt rows: the job was never claimed")
    if len(rows) > MAX_ATTEMPTS or len({row["job_id"] for row in rows}) != 1:
        raise ValueError(f"give the rows of one job, at most {MAX_ATTEMPTS}")
    origin = rows[0]["started_at"]

    def seconds(at: Any) -> float | None:
        return None if at is None else (at - origin).total_seconds()

    return [Attempt(str(row["worker"]), int(row["attempt"]), seconds(row["started_at"]),
                    seconds(row["started_at"]) + lease,
                    seconds(row["finished_at"]) if row["outcome"] == "done" else None,
                    row["outcome"], seconds(row["rejected_at"]))
            for row in rows]


def chart(attempts: Sequence[Attempt], *, effect: str = "模型调用",
          title: str = "同一个任务的两次尝试") -> Chart:
    """The lanes of the module docstring; `effect` names what a run of the handler did."""
    if not attempts:
        raise ValueError("nothing to plot: give at least one attempt")
    spans, marks = [], []
    for a in attempts:
        spans.append(Span(a.worker, a.start, a.lease_end, "lease", f"第 {a.attempt} 次尝试的租约",
                          detail=f"第 {a.attempt} 次尝试：{a.worker}，结局 {a.outcome}"))
        marks.append(Mark(a.worker, a.start, effect, "effect",
                          detail=f"第 {a.attempt} 次尝试在 {a.start:g} 秒领取并执行"))
        if a.finished is not None:
            marks.append(Mark(a.worker, a.finished, "结果写入", "accepted",
                              detail=f"{a.finished:g} 秒，第 {a.attempt} 次尝试的结果写入"))
        if a.refused_at is not None:
            marks.append(Mark(a.worker, a.refused_at, "迟到的报告被拒绝", "refused",
                              detail=f"{a.refused_at:g} 秒，第 {a.attempt} 次尝试的报告被拒绝"))
    workers = list(dict.fromkeys(a.worker for a in attempts))
    return Chart(title, spans, marks, lanes=workers,
                 lane_labels={w: f"工作者 {w}" for w in workers},
                 xlabel="秒（数据库时钟，从第一次领取起）")


def plot_attempts(attempts: Sequence[Attempt], *, effect: str = "模型调用",
                  title: str = "同一个任务的两次尝试") -> Figure:
    """The figure of the module docstring; `effect` names what a run of the handler did."""
    return draw(chart(attempts, effect=effect, title=title), width=8, legend=True,
                row_height=0.9)
