"""The claim race as two lanes (workers a and b): which statement each sent, in which order, and what it got.

    race = claimrace.Race()
    picked = race.step("a", naive.pick, a)          # calls naive.pick(a), records what a sent
    ...
    claimrace.plot_races({"先读再改（两条语句）": race, "一条语句领取": other})

`Race.step(who, fn, conn, *args, **kwargs)` runs `fn(conn, *args)` under `statements.recording(conn)`
and keeps one `Step` per call, in call order: the worker, the first word of each statement
it sent (SELECT, UPDATE, ...), and what the call returned. The figure is drawn from those
steps only, so it shows the statements the cells actually sent, in the course's one
vocabulary (`views.eventlanes`): a step that came back holding a lease token is a lease bar,
one that only read a row or got nothing is a wait.
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
from .eventlanes import Chart, Span
from .eventlanes import draw_chart as draw

__all__ = ["Race", "Step", "chart", "plot_races"]


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


def _kind(result: Any) -> str:
    """A step that came back holding a lease token is a held lease; one that only read a
    row, or got nothing, is drawn as waiting (the course's colours, `views.eventlanes`)."""
    return "lease" if isinstance(result, tuple) and result or (
        result is not None and not isinstance(result, int)) else "wait"


def chart(race: Race, name: str) -> Chart:
    """One race as lanes a and b: one box per step at its place in the call order (step n
    spans [n - 1, n]), labelled with the statements sent and what came back."""
    if not race.steps:
        raise ValueError("nothing to plot: give at least one race with at least one step")
    spans = [Span(step.worker, x + 0.05, x + 0.95, _kind(step.result),
                  f"{' + '.join(step.sent) or '（没有语句）'}\n→ {_describe(step.result)}",
                  detail=f"第 {x + 1} 步，工作者 {step.worker}：{' + '.join(step.sent)}")
             for x, step in enumerate(race.steps)]
    lanes = sorted({s.worker for s in race.steps})
    return Chart(name, spans, lanes=lanes, lane_labels={w: f"工作者 {w}" for w in lanes},
                 xlabel="第几步（按发出的先后）")


def plot_races(races: Mapping[str, Race], *, title: str = "两个工作者领取任务") -> Figure:
    """One panel per race (its key is the panel's title): lanes a and b, one box per step in
    call order, labelled with the statements sent and what came back."""
    if not races or any(not race.steps for race in races.values()):
        raise ValueError("nothing to plot: give at least one race with at least one step")
    fig = Figure(figsize=(4.2 * len(races), 3.0))
    axes = fig.subplots(1, len(races), squeeze=False)[0]
    for ax, (name, race) in zip(axes, races.items(), strict=True):
        draw(chart(race, name), ax=ax)
        count = len(race.steps)
        ax.set_xticks([x + 0.5 for x in range(count)], [str(x + 1) for x in range(count)])
        ax.set_xlim(0, count)
        ax.grid(False)
        ax.title.set_fontsize(10)
        for text in ax.texts:
            text.set_fontsize(7.5)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
