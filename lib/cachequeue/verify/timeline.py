"""The timeline of one history: workers as lanes, attempts as bars, faults as marks, and the
violation's witness highlighted. For a notebook and for a failure report.

    fig = timeline.figure(ops, snapshot, violation=violations[0])
    fig.savefig("run.png")

An attempt's bar runs from its claim to its end by the database clock (its attempt row's
close, else the end of its lease as the history knows it), coloured by outcome, on a
sub-row of its worker's lane when the worker ran several at once; a bar of the witness
gets a thick red edge. Faults: a kill or a terminate is a cross on the
victim's lane, a pause a grey band on it, a restart or a partition a band across all lanes,
an ambiguous commit a dashed line. Times are seconds since the run began.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from .checks import Violation

__all__ = ["COLOURS", "figure"]

COLOURS = {"done": "#2e7d32", "retry": "#f9a825", "failed": "#c62828", "expired": "#9e9e9e",
           "released": "#1565c0", "cancelled": "#6a1b9a", None: "#90a4ae"}


def _witness_tokens(violation: Violation | dict | None) -> set[str]:
    if violation is None:
        return set()
    witness = violation.witness if isinstance(violation, Violation) else violation["witness"]
    return {w.get("token") or w.get("lease_token") for w in witness} - {None}


def figure(ops: list[dict[str, Any]], snapshot: dict[str, Any],
           violation: Violation | dict | None = None, *, width: float = 10.0) -> Figure:
    """A matplotlib Figure of the run (no pyplot: safe in a worker or a test)."""
    starts = [op["time"] for op in ops] or [0.0]
    zero = min(starts)
    lanes = sorted({a["worker"] or "?" for a in snapshot.get("attempts", [])}
                   | {op["target"] for op in ops if op.get("target")},
                   key=lambda n: (len(n), n))
    row = {name: i for i, name in enumerate(lanes)}
    until = {op["token"]: op["until"] for op in ops
             if op["f"] == "claim" and op["type"] == "ok" and op.get("token")}
    highlight = _witness_tokens(violation)
    fig = Figure(figsize=(width, 1.2 + 0.45 * max(1, len(lanes))))
    ax = fig.add_subplot()
    end_of_run = max(starts) - zero
    spans = []  # (lane, start, end, attempt row)
    for a in snapshot.get("attempts", []):
        start = a["started_at"] - zero
        end = a["finished_at"] if a["finished_at"] is not None else until.get(a["lease_token"])
        end = (end - zero) if end is not None else end_of_run
        spans.append((row.get(a["worker"] or "?", 0), start, max(end, start + 0.02), a))
    # Attempts that overlap on one lane (a worker running several jobs) get sub-rows.
    slot_of, ends = {}, {}
    for lane, start, end, a in sorted(spans, key=lambda x: (x[0], x[1])):
        lane_ends = ends.setdefault(lane, [])
        slot = next((i for i, e in enumerate(lane_ends) if e <= start), len(lane_ends))
        if slot == len(lane_ends):
            lane_ends.append(end)
        lane_ends[slot] = end
        slot_of[id(a)] = slot
    for lane, start, end, a in spans:
        slots = len(ends[lane])
        height = 0.8 / slots
        y = lane - 0.4 + (slot_of[id(a)] + 0.5) * height
        marked = a["lease_token"] in highlight
        ax.barh(y, end - start, left=start, height=height * 0.9, gid="attempt",
                color=COLOURS.get(a["outcome"], COLOURS[None]),
                edgecolor="red" if marked else "none", linewidth=2.5 if marked else 0)
        if marked:
            ax.text(start, y - height * 0.5, f"job {a['job_id']} #{a['attempt']}", fontsize=7,
                    color="red", va="bottom")
    for op in ops:
        at = op["time"] - zero
        if op["f"] in ("kill", "terminate") and op.get("target") in row:
            ax.plot(at, row[op["target"]], marker="x", color="black", markersize=9)
        elif op["f"] == "pause" and op.get("target") in row:
            ax.barh(row[op["target"]], op["until"] - op["time"], left=at, height=0.9,
                    color="grey", alpha=0.25)
        elif op["f"] in ("restart", "blackhole"):
            begin = op.get("started", op["time"]) - zero
            ax.axvspan(begin, max(op.get("until", op["time"]) - zero, begin + 0.05),
                       color="purple" if op["f"] == "restart" else "orange", alpha=0.15)
        elif op["f"] == "cut":
            ax.axvline(at, color="black", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_xlabel("seconds since the run began")
    title = "history" if violation is None else (
        f"{violation.check if isinstance(violation, Violation) else violation['check']}: "
        f"{violation.message if isinstance(violation, Violation) else violation['message']}")
    ax.set_title(title[:110], fontsize=9)
    ax.invert_yaxis()
    fig.tight_layout()
    return fig
