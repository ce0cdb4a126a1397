"""A broker's redelivery as it ran: the first consumer stuck, the takeover, the stale ack.

    track = redelivery.Track()               # notes each step as the cell takes it
    (first,) = track.took(q.take("a"))       # XREADGROUP: delivery 1 to a
    q.age(job, 600); track.idled(job, 600)   # the notebook's manual clock (XCLAIM IDLE)
    (second,) = track.took(q.reclaim("b", lease=300))   # XAUTOCLAIM: delivery 2 to b
    track.acked("a", job, q.ack(job))        # a wakes up: XACK answers 1, b's entry is gone
    track.acked("b", job, q.ack(job))        # b's own XACK finds nothing: 0
    redelivery.plot_takeover(track)

Chapter 13 §4 (Redis Streams, `course.procs.streamlab.StreamQueue`). The notes keep what
each call returned (the deliveries, the ack's answer) and the idle time the cell set, so the
figure is the run's own: the x axis is the order of the steps (the clock of this section is
an entry's idle time, set by `q.age`, so several steps share one moment), and every label
says the idle time. Lanes: each consumer (its delivery as a bar, a stuck consumer's idle
time as a pause behind it, the takeover, each XACK: accepted on time, a stale ack that was
accepted anyway (`late`), or one that found nothing) and the group's pending list (who
holds the entry). Drawn in the course's one vocabulary (`views.eventlanes`).

    chart = redelivery.chaos_chart(result)     # brokerchaos.run(..., record=True)
    late = redelivery.late_results(result)     # each refused late result and the redelivery before it

Chapter 13 §8 (JetStream, `cachequeue worker --broker nats` under chaos): one lane per
worker process, each delivery from its `started` to its end (`finished`: done; a result the
fence refused: expired, with the red X; `redone`: the result was there, only acked; no end:
the process was killed), a takeover mark where a message started again (delivery > 1, the
ack_wait ran out), SIGKILL crosses, SIGSTOP..SIGCONT pauses, the broker's restarts as bands;
seconds since the first event. Hundreds of deliveries: show it with `views.interactive`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from matplotlib.figure import Figure

from ...checks import check_finite, check_int, check_text
from .eventlanes import Band, Chart, Mark, Span, draw_chart

__all__ = ["Late", "Note", "Track", "chaos_chart", "chart", "late_results", "plot_takeover"]

PEL = "待确认列表（XPENDING）"
MAX_NOTES = 100


@dataclass(frozen=True)
class Note:
    """One step: what (`took`, `idled`, `acked`), who, which entry, the delivery count (took),
    the idle seconds (idled), the answer (acked), and who held the entry at that moment."""

    step: int
    what: str
    consumer: str | None
    entry: str
    deliveries: int | None = None
    idle: float | None = None
    answer: int | None = None
    holder: str | None = None


@dataclass
class Track:
    """The notes of one run, in the order the cell made them."""

    notes: list[Note] = field(default_factory=list)

    def _holder(self, entry: str) -> str | None:
        for note in reversed(self.notes):
            if note.entry == entry and note.what == "took":
                return note.consumer
            if note.entry == entry and note.what == "acked" and note.answer == 1:
                return None  # acknowledged: no longer pending
        return None

    def _note(self, **fields: Any) -> None:
        if len(self.notes) >= MAX_NOTES:
            raise ValueError(f"a redelivery track keeps at most {MAX_NOTES} notes")
        self.notes.append(Note(step=len(self.notes) + 1, **fields))

    def took(self, deliveries: list) -> list:
        """Note deliveries (`StreamQueue.take` / `reclaim`'s answer); return them unchanged."""
        shown = list(deliveries)
        for d in shown:
            for name in ("id", "consumer", "deliveries"):
                if not hasattr(d, name):
                    raise TypeError(f"a delivery has id, consumer and deliveries, got {d!r}")
            check_int(d.deliveries, "deliveries", minimum=1)
        for d in shown:
            self._note(what="took", consumer=check_text(d.consumer, "consumer", limit=50),
                       entry=check_text(d.id, "id", limit=100), deliveries=d.deliveries,
                       holder=self._holder(d.id))
        return deliveries

    def idled(self, entry: str, seconds: float) -> None:
        """Note that the cell set `entry`'s idle time to `seconds` (`q.age`)."""
        check_text(entry, "entry", limit=100)
        self._note(what="idled", consumer=self._holder(entry), entry=entry,
                   idle=check_finite(seconds, "seconds", minimum=0))

    def acked(self, consumer: str, entry: str, answer: int) -> int:
        """Note `consumer`'s XACK of `entry` and its answer (1 or 0); return the answer."""
        check_text(consumer, "consumer", limit=50)
        check_text(entry, "entry", limit=100)
        check_int(answer, "answer", minimum=0, maximum=1)
        self._note(what="acked", consumer=consumer, entry=entry, answer=answer,
                   holder=self._holder(entry))
        return answer

    def holders(self, entry: str) -> list[tuple[str, int]]:
        """(consumer, delivery count) of each delivery of `entry`, in order."""
        return [(n.consumer, n.deliveries) for n in self.notes if n.entry == entry
                and n.what == "took"]

    def idle_before(self, entry: str, consumer: str) -> float | None:
        """The idle time the cell had set on `entry` when `consumer` took it (None: none)."""
        idle = None
        for note in self.notes:
            if note.entry == entry and note.what == "idled":
                idle = note.idle
            elif note.entry == entry and note.what == "took" and note.consumer == consumer:
                return idle
        return None

    def acks(self) -> list[tuple[str, str, int, str | None]]:
        """(consumer, entry, answer, holder at that moment) of every XACK noted."""
        return [(n.consumer, n.entry, n.answer, n.holder) for n in self.notes if n.what == "acked"]

    def stale_acks(self) -> list[tuple[str, str]]:
        """(who acknowledged, who held the entry) of every ack that was accepted although
        another consumer held the entry: the acknowledgement no broker can fence."""
        return [(c, h) for c, _, answer, h in self.acks() if answer == 1 and h not in (None, c)]


_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"


def _n(step: int) -> str:
    return _CIRCLED[step - 1] if step <= len(_CIRCLED) else f"({step})"


def chart(track: Track, *, title: str = "接手之后，旧消费者迟到的确认") -> Chart:
    """The lanes of the module docstring (step n at x = n)."""
    if not any(n.what == "took" for n in track.notes):
        raise ValueError("nothing to plot: the track has no delivery")
    last = len(track.notes) + 1.0
    spans, marks = [], []
    held: dict[str, tuple[str, int, int]] = {}   # entry -> (consumer, deliveries, step)

    def close(entry: str, step: int, kind: str) -> None:
        consumer, count, start = held.pop(entry)
        spans.append(Span(consumer, start, step, kind, f"第 {count} 次投递",
                          detail=f"{consumer} 持有第 {count} 次投递，第 {start}–{step} 步"))
        spans.append(Span(PEL, start, step, "lease", consumer,
                          detail=f"待确认列表：{consumer} 持有（第 {count} 次投递）"))

    for note in track.notes:
        s = note.step
        if note.what == "took":
            if note.entry in held:
                close(note.entry, s, "expired")
            kind = "takeover" if note.holder else "claim"
            word = "XAUTOCLAIM 接手" if note.holder else "XREADGROUP 领取"
            marks.append(Mark(note.consumer, s, f"{_n(s)} {word}（第 {note.deliveries} 次投递）", kind,
                              detail=f"第 {s} 步：{note.consumer} {word}，投递次数 {note.deliveries}"))
            held[note.entry] = (note.consumer, note.deliveries, s)
        elif note.what == "idled":
            if note.consumer:
                start = held[note.entry][2] if note.entry in held else s - 0.5
                spans.append(Span(note.consumer, start, s + 0.5, "pause",
                                  detail=f"{note.consumer} 卡住：空闲 {note.idle:g} 秒（q.age）"))
                marks.append(Mark(note.consumer, s, f"{_n(s)} 空闲 {note.idle:g} 秒", "expiry",
                                  detail=f"第 {s} 步：条目空闲 {note.idle:g} 秒"))
        elif note.what == "acked":
            stale = note.answer == 1 and note.holder not in (None, note.consumer)
            if note.answer == 1:
                kind, word = ("late", "XACK → 1：迟到的确认被接受") if stale else \
                    ("accepted", "XACK → 1：确认")
                if note.entry in held:
                    owner = held[note.entry][0]
                    close(note.entry, s, "running" if stale else "done")
                    if stale:
                        spans.append(Span(owner, s, last, "running",
                                          detail=f"{owner} 还在处理，但它的条目已不在待确认列表"))
                        marks.append(Mark(PEL, s, f"{_n(s)} 条目被 {note.consumer} 的确认移出",
                                          "event", detail="待确认列表里已经没有这条消息"))
            else:
                kind, word = "refused", "XACK → 0：什么也没确认"
            marks.append(Mark(note.consumer, s, f"{_n(s)} {word}", kind,
                              detail=f"第 {s} 步：{note.consumer} XACK，回答 {note.answer}"
                                     + (f"（条目当时由 {note.holder} 持有）" if stale else "")))
    for entry in list(held):
        close(entry, last, "running")
    consumers = list(dict.fromkeys(n.consumer for n in track.notes
                                   if n.what in ("took", "acked") and n.consumer))
    return Chart(title, spans, marks, lanes=[*consumers, PEL],
                 lane_labels={c: f"消费者 {c}" for c in consumers},
                 xlabel="第几步（这一节的时钟是条目的空闲时间，由 q.age 设定）")


def plot_takeover(track: Track, *, title: str = "接手之后，旧消费者迟到的确认") -> Figure:
    """The figure of the module docstring."""
    fig = draw_chart(chart(track, title=title), width=9, legend=True, row_height=0.8)
    ax = fig.axes[0]
    ax.set_xticks(range(1, len(track.notes) + 1), [_n(n.step) for n in track.notes])
    return fig


_OUTCOME = {"finished": "done", "stale": "expired", "redone": "done", "retrying": "retry",
            "dead": "failed", "handed-back": "released"}


@dataclass(frozen=True)
class Late:
    """A late result the fence refused, and the next delivery of the same message, the one
    that took it over (seconds since the run's first event)."""

    seq: int
    delivery: int
    worker: str
    started: float
    refused_at: float
    newer_delivery: int
    newer_worker: str
    newer_started: float


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _timeline(result: dict[str, Any]) -> tuple[list[dict], float]:
    if "timeline" not in result:
        raise ValueError("the run was not recorded: brokerchaos.run(..., record=True)")
    events = [dict(e, t=_epoch(e["time"])) for e in result["timeline"]["events"]]
    if not events:
        raise ValueError("the run recorded no delivery")
    return events, min(e["t"] for e in events)


def late_results(result: dict[str, Any]) -> list[Late]:
    """Every result the fence refused (`stale` with refused=result), each with the next
    delivery of its message (the one that took it over once ack_wait ran out)."""
    events, zero = _timeline(result)
    starts = [e for e in events if e["event"] == "started"]
    found = []
    for e in events:
        if e["event"] != "stale" or e.get("refused") != "result":
            continue
        mine = [s for s in starts if s["seq"] == e["seq"] and s["delivery"] == e["delivery"]]
        # The fence registered the newer delivery before it refused this result; its worker
        # logs `started` just after registering it, so that line may come a moment after
        # the refusal: it is matched by delivery number, not by time.
        newer = [s for s in starts if s["seq"] == e["seq"] and s["delivery"] > e["delivery"]]
        if not mine or not newer:
            raise ValueError(f"message {e['seq']}: a refused result without the deliveries "
                             f"that explain it (recorded events are missing)")
        new = min(newer, key=lambda s: s["delivery"])  # the redelivery that took it over
        found.append(Late(e["seq"], e["delivery"], mine[-1]["worker"], mine[-1]["t"] - zero,
                          e["t"] - zero, new["delivery"], new["worker"], new["t"] - zero))
    return found


def chaos_chart(result: dict[str, Any], *,
                title: str = "JetStream 上的混沌运行：每次投递、重投与被拒绝的迟到结果") -> Chart:
    """The lanes of the chaos run (see the module docstring)."""
    events, zero = _timeline(result)
    spans, marks, bands = [], [], []
    open_: dict[tuple[str, int, int], float] = {}
    last = max(e["t"] for e in events) - zero
    signals = [dict(m, t=_epoch(m["at"]) - zero) for m in result["timeline"]["signals"]]
    killed = {m["worker"]: m["t"] for m in signals if m["signal"] == "SIGKILL"}
    for e in sorted(events, key=lambda e: e["t"]):
        t, key = e["t"] - zero, (e["worker"], e.get("seq"), e.get("delivery"))
        if e["event"] == "started":
            open_[key] = t
            if (e.get("delivery") or 1) > 1:
                marks.append(Mark(e["worker"], t, "", "takeover",
                                  detail=f"消息 {e['seq']} 第 {e['delivery']} 次投递：ack_wait "
                                         f"过后重投给 {e['worker']}（{t:.3f} 秒）"))
            continue
        start = open_.pop(key, None)
        if start is not None and e["event"] in _OUTCOME:
            spans.append(Span(e["worker"], start, max(t, start), _OUTCOME[e["event"]],
                              detail=f"消息 {e['seq']} 第 {e['delivery']} 次投递，{e['worker']}，"
                                     f"{start:.3f}–{t:.3f} 秒：{e['event']}"))
        if e["event"] == "stale" and e.get("refused") == "result":
            marks.append(Mark(e["worker"], t, "", "refused",
                              detail=f"消息 {e['seq']} 第 {e['delivery']} 次投递迟到的结果被拒绝"
                                     f"（{t:.3f} 秒）"))
        elif e["event"] == "redone":
            marks.append(Mark(e["worker"], t, "", "event",
                              detail=f"消息 {e['seq']}：结果已在，只补确认（{t:.3f} 秒）"))
    for (worker, seq, delivery), start in open_.items():
        end = killed.get(worker, last)
        spans.append(Span(worker, start, max(end, start), "expired",
                          detail=f"消息 {seq} 第 {delivery} 次投递，{worker}：没有结局"
                                 f"（进程被杀），{start:.3f}–{end:.3f} 秒"))
    stopped: dict[str, float] = {}
    for m in sorted(signals, key=lambda m: m["t"]):
        if m["signal"] == "SIGKILL":
            marks.append(Mark(m["worker"], m["t"], "", "kill", detail=f"SIGKILL {m['worker']}"))
        elif m["signal"] == "SIGSTOP":
            stopped[m["worker"]] = m["t"]
        elif m["signal"] == "SIGCONT" and m["worker"] in stopped:
            spans.append(Span(m["worker"], stopped.pop(m["worker"]), m["t"], "pause",
                              detail=f"{m['worker']} 被 SIGSTOP 暂停，到 SIGCONT"))
    for killed_at, back in result["timeline"]["restarts"]:
        a, b = _epoch(killed_at) - zero, _epoch(back) - zero
        bands.append(Band(a, max(b, a), "代理重启", "restart", detail="nats-server 被杀并重启"))
    lanes = sorted({s.lane for s in spans} | {m.lane for m in marks},
                   key=lambda w: (w.split(".")[0], len(w), w))
    return Chart(title, spans, marks, bands, lanes=lanes, xlabel="秒（从第一个事件起，实测）",
                 stack=True)
