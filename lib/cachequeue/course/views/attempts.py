"""One job's attempts from its attempt rows: who ran it when, the side effect each run made, the refused report.

    shown = attempts.from_history(jobs.history(conn, job_id), lease=30)
    attempts.plot_attempts(shown)

`from_history` turns `jobs.history` rows into `Attempt`s in seconds since the first claim
(the rows' `started_at`, `finished_at` and `rejected_at`, read on the chapter's frozen
database clock). The figure has one lane per worker: the lease window of each attempt as a
bar (claim to claim + `lease`), a star where the attempt ran the handler (the side effect,
e.g. a model call: a handler runs right after its claim), a filled circle where the result
was stored, and an X where a late report was refused. The cell asserts the facts the
figure shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from ...checks import check_seconds
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["Attempt", "from_history", "plot_attempts"]

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


def plot_attempts(attempts: Sequence[Attempt], *, effect: str = "模型调用",
                  title: str = "同一个任务的两次尝试") -> Figure:
    """The figure of the module docstring; `effect` names what a run of the handler did."""
    if not attempts:
        raise ValueError("nothing to plot: give at least one attempt")
    workers = list(dict.fromkeys(a.worker for a in attempts))
    lane = {w: len(workers) - 1 - i for i, w in enumerate(workers)}
    end = max(max(a.lease_end for a in attempts),
              max((a.refused_at or 0.0) for a in attempts))
    fig = Figure(figsize=(8, 1.4 + 0.9 * len(workers)))
    ax = fig.subplots()
    for a in attempts:
        y = lane[a.worker]
        ax.barh(y, a.lease_end - a.start, left=a.start, height=0.36, color="#dadaeb",
                edgecolor="#756bb1")
        ax.annotate(f"第 {a.attempt} 次尝试的租约", (a.start, y + 0.26), fontsize=8)
        ax.plot(a.start, y, marker="*", color="#e6550d", markersize=15, linestyle="none")
        ax.annotate(effect, (a.start, y - 0.42), fontsize=8, color="#e6550d")
        if a.finished is not None:
            ax.plot(a.finished, y, marker="o", color="#31a354", markersize=9, linestyle="none")
            ax.annotate("结果写入", (a.finished + end * 0.02, y - 0.05), fontsize=8, color="#31a354")
        if a.refused_at is not None:
            ax.plot(a.refused_at, y, marker="X", color="#de2d26", markersize=11, linestyle="none")
            ax.annotate("迟到的报告被拒绝", (a.refused_at + end * 0.02, y - 0.05), fontsize=8,
                        color="#de2d26")
    ax.set_yticks(list(lane.values()), [f"工作者 {w}" for w in lane])
    ax.set_ylim(-0.8, len(workers) - 0.2)
    ax.set_xlim(-end * 0.03, end * 1.3)
    ax.set_xlabel("秒（数据库时钟，从第一次领取起）")
    ax.set_title(title)
    fig.tight_layout()
    return fig
