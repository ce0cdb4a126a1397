"""The claim race as two lanes (workers a and b): which statement each sent, in which order, and what it got.

    race = claimrace.Race()
    picked = race.step("a", naive.pick, a)          # calls naive.pick(a), records what a sent
    ...
    claimrace.plot_races({"先读再改（两条语句）": race, "一条语句领取": other})

`Race.step(who, fn, conn, *args, **kwargs)` runs `fn(conn, *args)` under `statements.recording(conn)`
and keeps one `Step` per call, in call order: the worker, the first word of each statement
it sent (SELECT, UPDATE, ...), and what the call returned. The figure is drawn from those
steps only, so it shows the statements the cells actually sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg
from matplotlib.figure import Figure

from ...checks import check_callable, check_text
from ..probes import statements
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["Race", "Step", "plot_races"]

_LANES = {"a": "tab:blue", "b": "tab:orange"}


@dataclass(frozen=True)
class Step:
    """One call of a race: who made it, the statements it sent (first word each), its result."""

    worker: str
    sent: tuple[str, ...]
    result: Any


@dataclass
class Race:
    """The steps of one race, in the order they ran."""

    steps: list[Step] = field(default_factory=list)

    def step(self, who: str, fn: Callable[..., Any], conn: psycopg.Connection, /, *args: Any,
             **kwargs: Any) -> Any:
        """Run fn(conn, *args, **kwargs) as worker `who`'s next step; return what it returned."""
        check_text(who, "who")
        check_callable(fn, "fn")
        with statements.recording(conn) as sent:
            result = fn(conn, *args, **kwargs)
        self.steps.append(Step(who, tuple(_verb(s) for s in sent), result))
        return result


# The first SQL command word written in capitals; the recorded text has its comments (prose,
# in lower case) folded onto one line with the statement, so the first word may be "--".
_VERB = re.compile(r"\b(WITH|SELECT|UPDATE|INSERT|DELETE|SET|SHOW)\b")


def _verb(statement: str) -> str:
    found = _VERB.search(statement)
    return found.group(1) if found else statement.split(None, 1)[0]


def _describe(result: Any) -> str:
    if result is None:
        return "没有可领的"
    if isinstance(result, tuple) and result:  # (job id, lease token)
        return f"任务 {result[0]} + 令牌"
    if isinstance(result, int):
        return f"任务 {result}"
    return "令牌"


def plot_races(races: Mapping[str, Race], *, title: str = "两个工作者领取任务") -> Figure:
    """One panel per race (its key is the panel's title): lanes a and b, one box per step in
    call order, labelled with the statements sent and what came back."""
    if not races or any(not race.steps for race in races.values()):
        raise ValueError("nothing to plot: give at least one race with at least one step")
    fig = Figure(figsize=(4.2 * len(races), 3.0))
    axes = fig.subplots(1, len(races), squeeze=False)[0]
    for ax, (name, race) in zip(axes, races.items(), strict=True):
        lanes = sorted({s.worker for s in race.steps})
        y = {w: len(lanes) - 1 - i for i, w in enumerate(lanes)}
        for x, step in enumerate(race.steps):
            colour = _LANES.get(step.worker, "tab:gray")
            ax.barh(y[step.worker], 0.9, left=x + 0.05, height=0.6, color=colour, alpha=0.25,
                    edgecolor=colour)
            words = " + ".join(step.sent) or "（没有语句）"
            ax.text(x + 0.5, y[step.worker], f"{words}\n→ {_describe(step.result)}",
                    ha="center", va="center", fontsize=7.5)
        ax.set_yticks([y[w] for w in lanes], [f"工作者 {w}" for w in lanes])
        ax.set_xticks([x + 0.5 for x in range(len(race.steps))],
                      [str(x + 1) for x in range(len(race.steps))])
        ax.set_xlim(0, len(race.steps))
        ax.set_ylim(-0.6, len(lanes) - 0.4)
        ax.set_xlabel("第几步（按发出的先后）")
        ax.set_title(name, fontsize=10)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
