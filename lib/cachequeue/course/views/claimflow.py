"""The parts of a statement written as CTEs (`WITH a AS (...), b AS (...) ...`) and which part reads which, drawn as a data-flow graph.

    flow = claimflow.parse(jobs.query("claim").sql)
    flow.reads["picked"]      # ('chosen', 'expired', 'fresh')
    claimflow.plot_flow(flow)

`parse` reads the statement text itself (comments and string literals removed, parentheses
matched), so the figure follows every change to the statement. Each CTE's body names the
parts it reads; `final` is what the statement's last, outer query reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from ...checks import check_text
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["Flow", "parse", "plot_flow"]

_START = re.compile(r"(?:\bWITH\s+|,\s*)(\w+)\s+AS\s+(?:MATERIALIZED\s+)?\(", re.IGNORECASE)
FINAL = "（外层查询）"


@dataclass(frozen=True)
class Flow:
    """The CTE names in order, what each reads (names of earlier or later parts), and what
    the outer query reads."""

    parts: tuple[str, ...]
    reads: dict[str, tuple[str, ...]]
    final: tuple[str, ...]

    def edges(self) -> set[tuple[str, str]]:
        """(from, to) for every part `to` that reads `from`; the outer query is FINAL."""
        found = {(source, part) for part, sources in self.reads.items() for source in sources}
        return found | {(source, FINAL) for source in self.final}


def _plain(sql: str) -> str:
    """The statement without comments and without the text inside string literals."""
    sql = re.sub(r"--[^\n]*", " ", sql)
    return re.sub(r"'(?:[^']|'')*'", "''", sql)


def _close(text: str, opened: int) -> int:
    """The index of the parenthesis that closes the one at `opened`."""
    depth = 0
    for i in range(opened, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise ValueError("unbalanced parentheses in the statement")


def parse(sql: str) -> Flow:
    """The Flow of a statement made of CTEs; a ValueError if it has none."""
    text = _plain(check_text(sql, "sql", limit=100_000))
    bodies: list[tuple[str, str]] = []
    at = 0
    while (found := _START.search(text, at)) and (not bodies or text[at:found.start()].strip() in ("", ",")):
        end = _close(text, found.end() - 1)
        bodies.append((found.group(1), text[found.end():end]))
        at = end + 1
    if not bodies:
        raise ValueError("the statement has no WITH ... AS (...) parts")
    names = tuple(name for name, _ in bodies)

    def reads(body: str, own: str | None) -> tuple[str, ...]:
        return tuple(n for n in names if n != own and re.search(rf"\b{n}\b", body))

    return Flow(names, {name: reads(body, name) for name, body in bodies}, reads(text[at:], None))


def _layers(flow: Flow) -> dict[str, int]:
    layer: dict[str, int] = {}
    for name in flow.parts:  # a CTE may only read parts defined before it
        layer[name] = 1 + max((layer[s] for s in flow.reads[name] if s in layer), default=-1)
    layer[FINAL] = 1 + max(layer[s] for s in flow.final) if flow.final else max(layer.values()) + 1
    return layer


def plot_flow(flow: Flow, *, title: str = "领取语句的各部分（CTE）：谁读谁") -> Figure:
    """Parts as boxes in layers (a part sits right of every part it reads), arrows from the
    part read to the part reading it."""
    layer = _layers(flow)
    columns: dict[int, list[str]] = {}
    for name in (*flow.parts, FINAL):
        columns.setdefault(layer[name], []).append(name)
    sources = {name: flow.reads.get(name, flow.final if name == FINAL else ()) for name in layer}
    at: dict[str, tuple[float, float]] = {}
    for x in sorted(columns):  # each column ordered by where its parts' sources sit (fewer crossings)
        names = columns[x]
        if x:
            names.sort(key=lambda n: -sum(at[s][1] for s in sources[n]) / max(len(sources[n]), 1))
        at |= {name: (x * 1.6, -(i - (len(names) - 1) / 2) * 0.9) for i, name in enumerate(names)}
    fig = Figure(figsize=(1.6 * len(columns) + 1.2, 0.9 * max(len(c) for c in columns.values()) + 1.4))
    ax = fig.subplots()
    for source, target in sorted(flow.edges()):
        ax.annotate("", xy=(at[target][0] - 0.5, at[target][1]), xytext=(at[source][0] + 0.5, at[source][1]),
                    arrowprops={"arrowstyle": "-|>", "color": "0.45", "lw": 1.0, "shrinkA": 1, "shrinkB": 1})
    for name, (x, y) in at.items():
        final = name == FINAL
        ax.add_patch(FancyBboxPatch((x - 0.5, y - 0.2), 1.0, 0.4, boxstyle="round,pad=0.04",
                                    facecolor="tab:green" if final else "tab:blue", alpha=0.2,
                                    edgecolor="tab:green" if final else "tab:blue"))
        ax.text(x, y, name, ha="center", va="center", fontsize=9)
    xs = [p[0] for p in at.values()]
    ys = [p[1] for p in at.values()]
    ax.set_xlim(min(xs) - 0.7, max(xs) + 0.7)
    ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
    ax.set_axis_off()
    ax.set_title(title)
    fig.tight_layout()
    return fig
