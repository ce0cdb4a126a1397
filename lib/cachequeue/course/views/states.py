"""The job's states and the operations that move a job between them, as a table and a diagram.

`TRANSITIONS` is the one source of truth the figures draw: every edge names the `jobs`
function (or the claim's takeover) that takes it. `tests/integration/course/test_states.py`
drives each operation on a real PostgreSQL queue and checks the state before and after,
and that no other operation moves a job out of a state, so the diagram cannot drift from
the queue's SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from ...checks import check_text
from ...queue.limits import MAX_HANDBACKS
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["COLOURS", "STATES", "TRANSITIONS", "Transition", "edges", "plot_states"]

STATES = ("pending", "running", "done", "failed", "cancelled")

# The same colours as timeline.COLOURS where a state and an outcome share a meaning.
COLOURS = {"pending": "tab:gray", "running": "tab:blue", "done": "tab:green",
           "failed": "tab:red", "cancelled": "tab:purple"}


@dataclass(frozen=True)
class Transition:
    """One edge: `operation` moves a job from `source` to `target`; `label` is its Chinese name."""

    source: str
    target: str
    operation: str
    label: str


TRANSITIONS: tuple[Transition, ...] = (
    Transition("pending", "running", "claim", "领取"),
    Transition("running", "done", "finish", "完成"),
    Transition("running", "pending", "fail_retry", "失败，退避后重试"),
    Transition("running", "pending", "release", "交还"),
    Transition("running", "failed", "release_capped", f"交还次数用尽（第 {MAX_HANDBACKS} 次交还）"),
    Transition("running", "running", "takeover", "租约到期，被接手"),
    Transition("running", "failed", "fail_final", "失败且不再重试（尝试用尽、过截止时间、永久错误）"),
    Transition("running", "failed", "expired_last", "最后一次尝试的租约到期"),
    Transition("pending", "cancelled", "cancel", "取消"),
    Transition("running", "cancelled", "cancel", "取消"),
    Transition("failed", "pending", "retry", "人工重试（写审计）"),
)

# Where each state sits in the diagram (x, y).
_AT = {"pending": (0.0, 1.0), "running": (3.0, 1.0), "done": (6.5, 2.0),
       "failed": (6.5, 1.0), "cancelled": (6.5, 0.0)}

# Per edge: where the arrow starts and ends, its curvature (matplotlib's arc3 rad), and where
# its label sits; laid out by hand so that no two edges or labels overlap.
_LAYOUT = {
    ("pending", "running"): ((0.6, 1.1), (2.4, 1.1), -0.25, (1.5, 1.45)),
    ("running", "pending"): ((2.4, 0.9), (0.6, 0.9), -0.25, (1.5, 0.5)),
    ("running", "done"): ((3.6, 1.15), (5.9, 2.0), 0.0, (4.55, 1.75)),
    ("running", "failed"): ((3.6, 1.0), (5.9, 1.0), 0.0, (4.75, 1.2)),
    ("running", "cancelled"): ((3.6, 0.85), (5.9, 0.0), 0.0, (4.6, 0.3)),
    ("pending", "cancelled"): ((0.0, 0.75), (5.9, -0.1), 0.12, (2.4, -0.25)),
    ("failed", "pending"): ((6.3, 1.25), (-0.2, 1.25), 0.33, (3.2, 2.3)),
}
def edges(operations: Iterable[str] | None = None) -> set[tuple[str, str]]:
    """The (source, target) pairs of TRANSITIONS, or of those whose operation is in `operations`."""
    wanted = None if operations is None else {check_text(o, "operation") for o in operations}
    return {(t.source, t.target) for t in TRANSITIONS if wanted is None or t.operation in wanted}


def _labels() -> dict[tuple[str, str], list[str]]:
    grouped: dict[tuple[str, str], list[str]] = {}
    for t in TRANSITIONS:
        grouped.setdefault((t.source, t.target), []).append(t.label)
    return grouped


def plot_states(highlight: Iterable[str] = (), *, title: str = "任务的状态与转移") -> Figure:
    """The state diagram of TRANSITIONS; edges whose operation is in `highlight` are drawn bold
    in black, the others in gray (a chapter highlights the operations it teaches)."""
    marked = {check_text(o, "highlight") for o in highlight}
    unknown = marked - {t.operation for t in TRANSITIONS}
    if unknown:
        raise ValueError(f"highlight names no operation of TRANSITIONS: {sorted(unknown)}")
    fig = Figure(figsize=(8.0, 4.4))
    ax = fig.subplots()
    for state, (x, y) in _AT.items():
        ax.add_patch(FancyBboxPatch((x - 0.55, y - 0.2), 1.1, 0.4, boxstyle="round,pad=0.05",
                                    facecolor=COLOURS[state], alpha=0.25, edgecolor=COLOURS[state]))
        ax.text(x, y, state, ha="center", va="center", fontsize=11)
    for (source, target), labels in _labels().items():
        ops = {t.operation for t in TRANSITIONS if (t.source, t.target) == (source, target)}
        colour, width = ("black", 1.6) if (ops & marked or not marked) else ("0.6", 1.0)
        text = "\n".join(dict.fromkeys(labels))
        if source == target:
            x, y = _AT[source]
            ax.annotate("", xy=(x + 0.25, y + 0.25), xytext=(x - 0.25, y + 0.25),
                        arrowprops={"arrowstyle": "-|>", "color": colour, "lw": width,
                                    "connectionstyle": "arc3,rad=-1.5"})
            ax.text(x, y + 0.68, text, ha="center", va="bottom", fontsize=8, color=colour)
            continue
        start, end, rad, (lx, ly) = _LAYOUT[(source, target)]
        ax.annotate("", xy=end, xytext=start,
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": width,
                                "connectionstyle": f"arc3,rad={rad}"})
        ax.text(lx, ly, text, ha="center", va="center", fontsize=8, color=colour,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
    ax.set_xlim(-0.8, 7.3)
    ax.set_ylim(-0.5, 2.8)
    ax.set_axis_off()
    ax.set_title(title)
    fig.tight_layout()
    return fig
