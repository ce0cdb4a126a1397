"""The timeline of one history: workers as lanes, attempts as bars, faults as marks, and the
violation's witness highlighted. For a notebook and for a failure report.

    fig = timeline.figure(ops, snapshot, violation=violations[0])   # the whole run
    fig.savefig("run.png")
    ops, snapshot = timeline.kept(result)          # a kept run (`--keep`, `driver.run(workdir=)`)
    fig = timeline.witness_figure(ops, snapshot, result["violations"][0])   # the witness only

Drawn in the course's one vocabulary (`cachequeue.lanes`, the same colours and markers as
the chapters' timelines; `save_html` writes the same lanes as a zoomable offline page, which
`--keep` leaves beside timeline.png). An attempt's bar runs from its claim to its end by the database
clock (its attempt row's close, else the end of its lease as the history knows it),
coloured by outcome, on a sub-row of its worker's lane when the worker ran several at
once; a bar of the witness gets a thick red edge. Faults: a kill or a terminate is a cross
on the victim's lane, a pause a grey bar behind it, a restart or a partition a band across
all lanes, an ambiguous commit (cut) a dotted line. Times are seconds since the run began.

The witness view (`witness_chart`, `witness_figure`) keeps only the lanes and the time
around the witness and draws its operations as marks: each claim, renewal, finish (a red X
when it was refused), the handler's side effect, so a learner sees why a statement is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from ..lanes import SPAN_KINDS, Band, Chart, Mark, Span, draw
from ..laneshtml import page
from .checks import Violation

__all__ = ["COLOURS", "chart", "figure", "kept", "save_html", "witness_chart", "witness_figure"]

_OUTCOMES = ("done", "retry", "failed", "expired", "released", "cancelled")
COLOURS = {**{o: SPAN_KINDS[o].colour for o in _OUTCOMES}, None: SPAN_KINDS["running"].colour}
"""outcome -> colour (None: still running), as in every chapter's timeline."""

# How a witness operation is drawn: (mark kind, label) for its `ok` answer.
_OPS = {"claim": ("claim", "领取"), "renew": ("renewal", "续租"), "effect": ("effect", "副作用"),
        "finish": ("accepted", "完成"), "fail": ("accepted", "报告失败"),
        "release": ("accepted", "交还")}
MAX_WITNESS_LANES = 12


def _as_dict(violation: Violation | dict | None) -> dict | None:
    if violation is None or isinstance(violation, dict):
        return violation
    return violation.as_dict()


def _tokens(violation: dict | None) -> set[str]:
    if violation is None:
        return set()
    return {w.get("token") or w.get("lease_token") for w in violation["witness"]} - {None}


def kept(result: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(ops, snapshot) of a kept run: `result` is `driver.run`'s answer (it has `history`
    only when the run was kept) or its folder."""
    from . import history

    if isinstance(result, str | Path):
        folder = Path(result)
        path = folder / "history.jsonl"
    else:
        if "history" not in result:
            raise ValueError("the run was not kept: run it with a folder (--keep DIR, workdir=)")
        path = Path(result["history"])
        folder = path.parent
    snapshot = json.loads((folder / "snapshot.json").read_text(encoding="utf-8"))
    return history.read(path), snapshot


def _lane_name(worker: str | None) -> str:
    return worker or "?"


def chart(ops: list[dict[str, Any]], snapshot: dict[str, Any],
          violation: Violation | dict | None = None) -> Chart:
    """The lanes of the whole run (see the module docstring)."""
    found = _as_dict(violation)
    zero = min((op["time"] for op in ops), default=0.0)
    end_of_run = max((op["time"] for op in ops), default=0.0) - zero
    until = {op["token"]: op["until"] for op in ops
             if op["f"] == "claim" and op["type"] == "ok" and op.get("token")}
    highlight = _tokens(found)
    spans, marks, bands = [], [], []
    for a in snapshot.get("attempts", []):
        start = a["started_at"] - zero
        end = a["finished_at"] if a["finished_at"] is not None else until.get(a["lease_token"])
        end = (end - zero) if end is not None else end_of_run
        marked = a["lease_token"] in highlight
        spans.append(Span(_lane_name(a["worker"]), start, max(end, start + 0.02),
                          a["outcome"] if a["outcome"] in _OUTCOMES else "running",
                          f"job {a['job_id']} #{a['attempt']}" if marked else "",
                          detail=f"job {a['job_id']} attempt {a['attempt']} "
                                 f"token {str(a['lease_token'])[:8]} outcome {a['outcome']} "
                                 f"{start:.3f}–{end:.3f}s",
                          highlight=marked))
    for op in ops:
        at = op["time"] - zero
        target = op.get("target")
        if op["f"] in ("kill", "terminate") and target:
            marks.append(Mark(target, at, "", "kill", detail=f"{op['f']} {target} {at:.3f}s"))
        elif op["f"] == "pause" and target and op.get("until") is not None:
            spans.append(Span(target, at, max(op["until"] - zero, at), "pause",
                              detail=f"pause {target} {at:.3f}–{op['until'] - zero:.3f}s"))
        elif op["f"] in ("restart", "blackhole"):
            begin = op.get("started", op["time"]) - zero
            bands.append(Band(begin, max(op.get("until", op["time"]) - zero, begin + 0.05), "",
                              "restart" if op["f"] == "restart" else "partition",
                              detail=f"{op['f']} {begin:.3f}s"))
        elif op["f"] == "cut":
            bands.append(Band(at, at, "", "fault", detail=f"cut (ambiguous commit) {at:.3f}s"))
    used = {s.lane for s in spans} | {m.lane for m in marks}
    lanes = sorted(used, key=lambda n: (len(n), n))
    title = "运行的历史" if found is None else f"{found['check']}: {found['message']}"[:110]
    if not lanes:
        raise ValueError("nothing to draw: the history has no attempt and no fault")
    return Chart(title, spans, marks, bands, lanes=lanes, xlabel="秒（从运行开始）", stack=True)


def figure(ops: list[dict[str, Any]], snapshot: dict[str, Any],
           violation: Violation | dict | None = None, *, width: float = 10.0) -> Figure:
    """A matplotlib Figure of the run (no pyplot: safe in a worker or a test)."""
    shown = chart(ops, snapshot, violation)
    fig = draw(shown, width=width, legend=True, row_height=0.45)
    fig.axes[0].title.set_fontsize(9)
    return fig


def witness_chart(ops: list[dict[str, Any]], snapshot: dict[str, Any],
                  violation: Violation | dict, *, margin: float = 0.5) -> Chart:
    """Only the witness: the lanes of the processes its operations and attempts name, the
    time from its first to its last moment (plus `margin` seconds), its attempts as bars
    (red-edged) and its operations as marks (a refused or failed report is a red X)."""
    found = _as_dict(violation)
    if found is None:
        raise ValueError("give a violation: its witness is what is drawn")
    zero = min((op["time"] for op in ops), default=0.0)
    tokens = _tokens(found)
    jobs = {w.get("job") or w.get("job_id") for w in found["witness"]} - {None}
    if found.get("job") is not None:
        jobs.add(found["job"])
    mine = [op for op in ops if op.get("type") in ("ok", "fail", "unknown")
            and (op.get("token") in tokens or (op.get("job") in jobs and op["f"] in _OPS))]
    rows = [a for a in snapshot.get("attempts", []) if a["lease_token"] in tokens
            or a["job_id"] in jobs]
    spans, marks = [], []
    for a in rows:
        start = a["started_at"] - zero
        end = a["finished_at"] if a["finished_at"] is not None else a.get("locked_until")
        end = max((end - zero) if end is not None else start, start + 0.02)
        spans.append(Span(_lane_name(a["worker"]), start, end,
                          a["outcome"] if a["outcome"] in _OUTCOMES else "running",
                          f"job {a['job_id']} #{a['attempt']}",
                          detail=f"job {a['job_id']} attempt {a['attempt']} token "
                                 f"{str(a['lease_token'])[:8]} outcome {a['outcome']}",
                          highlight=a["lease_token"] in tokens))
    # A stale report that was accepted (the witness of stale-accepted ends with it).
    stale = {(w.get("call"), w.get("time")) for w in found["witness"][-1:]
             if found["check"] == "stale-accepted" and w.get("outcome") == "accepted"}
    for op in mine:
        kind, word = _OPS.get(op["f"], ("event", op["f"]))
        refused = op["type"] != "ok" or op.get("outcome") == "rejected"
        if op["f"] in ("finish", "fail", "release", "renew") and refused:
            kind, word = "refused", f"{word}被拒绝" if op["type"] == "ok" else f"{word}（{op['type']}）"
        elif (op.get("call"), op.get("time")) in stale:
            kind, word = "late", f"{word}：迟到却被接受"
        marks.append(Mark(op.get("process") or "?", op["time"] - zero, word, kind,
                          detail=f"{op['process']} {op['type']} {op['f']} job {op.get('job')} "
                                 f"attempt {op.get('attempt')} {op['time'] - zero:.3f}s"))
    if not spans and not marks:
        raise ValueError("the witness names no attempt and no operation of this history")
    moments = [s.start for s in spans] + [s.end for s in spans] + [m.at for m in marks]
    low, high = min(moments) - margin, max(moments) + margin
    for op in ops:  # the faults inside the window, on the witness's lanes or across all
        at = op["time"] - zero
        if low <= at <= high and op["f"] in ("kill", "terminate", "pause") and op.get("target"):
            marks.append(Mark(op["target"], at, op["f"], "kill" if op["f"] != "pause" else "signal",
                              detail=f"{op['f']} {op['target']} {at:.3f}s"))
    lanes = sorted({s.lane for s in spans} | {m.lane for m in marks}, key=lambda n: (len(n), n))
    if len(lanes) > MAX_WITNESS_LANES:
        raise ValueError(f"the witness spans {len(lanes)} lanes; draw the run with figure()")
    return Chart(f"见证：{found['check']}" + ("" if found.get("job") is None
                                              else f"（任务 {found['job']}）"),
                 spans, marks, lanes=lanes, xlabel="秒（从运行开始）", stack=True)


def witness_figure(ops: list[dict[str, Any]], snapshot: dict[str, Any],
                   violation: Violation | dict, *, width: float = 8.0) -> Figure:
    """The witness of `violation` (see `witness_chart`) as a matplotlib Figure."""
    return draw(witness_chart(ops, snapshot, violation), width=width, legend=True,
                row_height=0.8)


def save_html(ops: list[dict[str, Any]], snapshot: dict[str, Any],
              violation: Violation | dict | None, path: str | Path) -> Path:
    """The run's timeline as a standalone, offline HTML page (zoom, pan, hover an attempt
    for its job, attempt, token and outcome): `timeline.html` beside `timeline.png`."""
    path = Path(path)
    path.write_text(page(chart(ops, snapshot, violation), width=1100), encoding="utf-8")
    return path
