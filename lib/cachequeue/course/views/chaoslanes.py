"""Chapter 06's chaos run as lanes: every attempt, every refused late report, every fault.

    result = chaos.run(..., record=True)          # the timeline, read before the server goes
    chart = chaoslanes.chart(result["timeline"])  # a `views.eventlanes.Chart`
    display(interactive.html(chart)); interactive.static(chart)

One lane per worker process (w1, w1.1 after w1 was killed and replaced, ...), sorted by
slot. Each job_attempts row is one bar on its worker's lane, from its start to its end,
coloured by its outcome (the course's one vocabulary, `cachequeue.lanes`): an attempt
closed `expired` ends at the lease end it lost. A refused late report is a red X on the
lane of the worker that sent it, at the moment the database refused it. The faults: a
SIGKILL is a black x on its lane, a SIGSTOP a grey pause behind the lane until its SIGCONT
(or the SIGKILL that ended it), a server restart a band across every lane. Times are the
run's own, in seconds since its first worker was started; nothing is invented.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...checks import check_instance, check_text
from .eventlanes import Band, Chart, Mark, Span

__all__ = ["MAX_ATTEMPTS", "chart", "refused", "lane_order"]

MAX_ATTEMPTS = 20_000
"""More attempts than this are not one readable chart (chapter 06 draws about 250)."""

_OUTCOMES = {"done", "retry", "failed", "expired", "released", "cancelled"}
_KEYS = {"attempts", "signals", "restarts"}


def lane_order(workers: set[str]) -> list[str]:
    """Worker names by slot, then generation (w1, w1.1, w1.2, w2, ...)."""
    return sorted(workers, key=lambda w: (w.split(".")[0], len(w), w))


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value \
            or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
    return float(value)


def _check(record: Mapping[str, Any]) -> None:
    check_instance(record, "record", Mapping)
    missing = _KEYS - set(record)
    if missing:
        raise ValueError(f"not a chaos timeline (chaos.run(record=True)): missing {sorted(missing)}")
    if not record["attempts"]:
        raise ValueError("nothing to draw: the timeline has no attempts")
    if len(record["attempts"]) > MAX_ATTEMPTS:
        raise ValueError(f"at most {MAX_ATTEMPTS} attempts, got {len(record['attempts'])}")
    for a in record["attempts"]:
        check_text(a["worker"], "an attempt's worker")
        _seconds(a["start"], "an attempt's start")
        if a["end"] is not None and _seconds(a["end"], "an attempt's end") < a["start"]:
            raise ValueError(f"attempt {a['job']}#{a['attempt']} ends before it starts")
        if a["outcome"] is not None and a["outcome"] not in _OUTCOMES:
            raise ValueError(f"unknown outcome {a['outcome']!r}")
        if (a["rejected"] is None) != (a["rejected_at"] is None):
            raise ValueError("a refused report has both its kind and its time")
        if a["rejected_at"] is not None:
            _seconds(a["rejected_at"], "an attempt's rejected_at")


def refused(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The attempts whose late report was refused, in order of refusal."""
    _check(record)
    return sorted((a for a in record["attempts"] if a["rejected_at"] is not None),
                  key=lambda a: a["rejected_at"])


def chart(record: Mapping[str, Any], *,
          title: str = "混沌运行：每次尝试、被拒绝的迟到报告与每次故障") -> Chart:
    """The lanes of the module docstring, from `chaos.run(..., record=True)["timeline"]`."""
    _check(record)
    check_text(title, "title", limit=200)
    attempts = record["attempts"]
    signals = sorted(record["signals"], key=lambda m: _seconds(m["at"], "a signal's at"))
    restarts = [(_seconds(a, "a restart's start"), _seconds(b, "a restart's end"))
                for a, b in record["restarts"]]
    last = max([a["end"] or a["start"] for a in attempts] + [a["rejected_at"] or 0 for a in attempts]
               + [m["at"] for m in signals] + [b for _, b in restarts])
    spans, marks, bands = [], [], []
    for a in attempts:
        end = last if a["end"] is None else a["end"]
        outcome = a["outcome"] or "running"
        spans.append(Span(a["worker"], a["start"], end, outcome,
                          detail=f"任务 {a['job']} 第 {a['attempt']} 次尝试，{a['worker']}，"
                                 f"{a['start']:.3f}–{end:.3f} 秒：{outcome}"))
        if a["rejected_at"] is not None:
            marks.append(Mark(a["worker"], a["rejected_at"], "", "refused",
                              detail=f"任务 {a['job']} 第 {a['attempt']} 次尝试迟到的 "
                                     f"{a['rejected']} 报告被拒绝（{a['rejected_at']:.3f} 秒；"
                                     f"租约在 {end:.3f} 秒已到期）"))
    stopped: dict[str, float] = {}
    for m in signals:
        worker, at = m["worker"], m["at"]
        check_text(worker, "a signal's worker")
        if m["signal"] == "SIGKILL":
            marks.append(Mark(worker, at, "", "kill", detail=f"SIGKILL {worker}（{at:.3f} 秒）"))
        if m["signal"] == "SIGSTOP":
            stopped[worker] = at
        elif m["signal"] in ("SIGCONT", "SIGKILL") and worker in stopped:
            began = stopped.pop(worker)
            spans.append(Span(worker, began, at, "pause",
                              detail=f"{worker} 被 SIGSTOP 暂停，{began:.3f}–{at:.3f} 秒，"
                                     f"到 {m['signal']}"))
        elif m["signal"] not in ("SIGKILL", "SIGSTOP", "SIGCONT"):
            raise ValueError(f"not a fault signal: {m['signal']!r}")
    for worker, began in stopped.items():  # never resumed within the record
        spans.append(Span(worker, began, max(last, began), "pause",
                          detail=f"{worker} 被 SIGSTOP 暂停，从 {began:.3f} 秒起"))
    for a, b in restarts:
        bands.append(Band(a, max(a, b), "服务器重启", "restart",
                          detail=f"PostgreSQL 重启，{a:.3f}–{b:.3f} 秒"))
    lanes = lane_order({s.lane for s in spans} | {m.lane for m in marks})
    return Chart(title, spans, marks, bands, lanes=lanes,
                 lane_labels={w: f"工作者 {w}" for w in lanes},
                 xlabel="秒（从第一个工作者启动起，实测）", stack=True)
