"""One job's attempts on a time axis, each retry inside the jitter window it was drawn from.

    windows = backoff.windows(starts, policy)        # [(earliest, latest), ...] per retry
    backoff.plot_attempts(starts, policy, rejected=fifth)

`starts` are the attempts' start times in seconds since the submit (as in the attempt
table). After attempt n failed at s_n, full jitter draws the next start from
[s_n, s_n + ceiling(n)] (equal jitter from [s_n + ceiling(n)/2, s_n + ceiling(n)]): that
range is the window. A `rejected` start is one the queue drew but did not schedule because
it fell after the policy's deadline.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ...checks import check_finite, check_instance
from ...queue.retry import RetryPolicy
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["plot_attempts", "windows"]


def windows(starts: Sequence[float], policy: RetryPolicy) -> list[tuple[float, float]]:
    """The window each retry's start was drawn from: one per start after the first, plus one
    for the retry that would follow the last start."""
    check_instance(policy, "policy", RetryPolicy)
    if not starts:
        raise ValueError("give at least one attempt start")
    times = [check_finite(s, "start") for s in starts]
    return [(s + policy.floor(n), s + policy.ceiling(n)) for n, s in enumerate(times, start=1)]


def plot_attempts(starts: Sequence[float], policy: RetryPolicy, *, rejected: float | None = None,
                  title: str = "每次尝试的开始时刻与抖动窗口") -> Figure:
    """Attempts as dots on one row each, the window of each retry as a bar, the deadline as a
    red line, and the rejected start (if any) as an X."""
    spans = windows(starts, policy)
    rows = len(starts) + (rejected is not None)
    fig = Figure(figsize=(7.5, 0.45 * rows + 1.6))
    ax = fig.subplots()
    for n in range(1, rows + 1):
        y = rows - n
        if n > 1:
            low, high = spans[n - 2]
            ax.broken_barh([(low, high - low)], (y - 0.25, 0.5), facecolors="tab:orange", alpha=0.3)
        if n <= len(starts):
            ax.plot(starts[n - 1], y, marker="o", color="tab:blue")
        else:
            ax.plot(rejected, y, marker="X", color="red", markersize=10)
    if policy.deadline is not None:
        ax.axvline(policy.deadline, color="red", linestyle="--")
    ax.set_yticks([rows - n for n in range(1, rows + 1)], [f"第 {n} 次" for n in range(1, rows + 1)])
    ax.set_xlabel("提交之后的秒数")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    handles = [Line2D([], [], marker="o", color="tab:blue", linestyle="none", label="尝试开始"),
               Patch(color="tab:orange", alpha=0.3, label="抽取等待的窗口")]
    if policy.deadline is not None:
        handles.append(Line2D([], [], color="red", linestyle="--", label="截止时间"))
    if rejected is not None:
        handles.append(Line2D([], [], marker="X", color="red", linestyle="none",
                              label="抽到了、但晚于截止时间，不再安排"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig
