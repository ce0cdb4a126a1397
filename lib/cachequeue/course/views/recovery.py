"""Chapter 09's pictures, drawn from the chapter's own run: a running job cancelled (on a
time axis), the outbox relay killed between publishing and marking, and dead letters
retried in bulk.

    steps = outbox_steps(written=3, relays=[("中继 1", 0.0, first.lines, True), ...],
                         messages=relaylab.messages(conn))
    plot_outbox(steps, lease=30)

`outbox_steps` reads what the run left: the relays' own output lines (`published
event_id=…`, `holding`, `relayed count=N`), in the order they ran, and the stand-in broker's
log (every message it acknowledged, duplicates included, in order). Its rows are the steps
in that order, one lane each: the business transactions (the job row and its outbox row
committed together), each relay, the broker, and the consumer (the first delivery of an
event id is handled, a repeat is dropped by the inbox). The x axis is the order of the steps,
not time: the relays' database clocks are frozen, and each lane's label says at which second.

    frame = deadletter_frame(jobs.history(conn), jobs.audit(conn), since=start)
    plot_deadletters(frame, marks={"演练": 0.0, "运维读到演练结果（until）": 60.0, ...})

`deadletter_frame` turns the attempt rows and the audit rows into one row per job and event
(`failed`: an attempt that used up the job's attempts; `retried`: the bulk retry that gave it
back; `claimed`: the next attempt begins), in seconds since `since`. The figure draws each job
as a lane: a red span while it sits in the dead letters, a grey one after the retry, the
operator's moments as dotted lines across every lane. The cells assert the facts the figures
show from these frames.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ...checks import check_finite, check_instance, check_int, check_text
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

__all__ = ["deadletter_frame", "outbox_steps", "plot_cancel", "plot_deadletters", "plot_outbox"]

MAX_STEPS = 200
BUSINESS, BROKER, CONSUMER = "业务事务", "代理", "消费方"
_COLOURS = {"commit": "#3182bd", "publish": "#31a354", "accepted": "#31a354", "kill": "#de2d26",
            "nothing": "#969696", "mark": "#31a354", "handled": "#31a354", "duplicate": "#969696"}
_WORDS = {"commit": "提交", "publish": "发布", "accepted": "收到", "kill": "SIGKILL",
          "nothing": "领到 0 个", "mark": "标记", "handled": "处理", "duplicate": "丢弃重复"}


def _relay_rows(name: str, lines: Sequence[str], killed: bool,
                n_of: Mapping[Any, int]) -> list[dict[str, Any]]:
    rows = []
    for line in lines:
        if line.startswith("published event_id="):
            event_id = line.removeprefix("published event_id=")
            if event_id not in n_of:
                raise ValueError(f"{name} published event {event_id}, which the broker never got")
            rows.append({"lane": name, "kind": "publish", "n": n_of[event_id]})
        elif line.startswith("relayed count="):
            count = int(line.removeprefix("relayed count="))
            rows.append({"lane": name, "kind": "mark" if count else "nothing", "n": count})
    if killed:
        rows.append({"lane": name, "kind": "kill", "n": None})
    return rows


def outbox_steps(*, written: int, relays: Sequence[tuple[str, float, Sequence[str], bool]],
                 messages: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The steps of the outbox run (module docstring): columns step, lane, kind, n (the
    event's `n`, or a count for `mark`/`nothing`), seq (the broker's sequence number).
    `relays`: (name, second of its database clock, its output lines, whether it was killed)
    in the order they ran; `messages`: the broker's log (`relaylab.messages`)."""
    check_int(written, "written", minimum=0, maximum=MAX_STEPS)
    n_of = {str(m["event_id"]): int(m["payload"]["n"]) for m in messages}
    rows: list[dict[str, Any]] = [{"lane": BUSINESS, "kind": "commit", "n": n} for n in range(written)]
    log = iter(messages)
    for name, _, lines, killed in relays:
        check_text(name, "relay name", limit=40)
        for row in _relay_rows(name, lines, killed, n_of):
            rows.append(row)
            if row["kind"] == "publish":  # the broker acknowledged it: its next message
                message = next(log, None)
                if message is None or int(message["payload"]["n"]) != row["n"]:
                    raise ValueError("the relays' lines and the broker's log disagree")
                rows.append({"lane": BROKER, "kind": "accepted", "n": row["n"],
                             "seq": int(message["seq"])})
    if next(log, None) is not None:
        raise ValueError("the broker has messages no relay line accounts for")
    seen: set[str] = set()
    for message in messages:  # the consumer's inbox: the first delivery of an id is handled
        event_id = str(message["event_id"])
        rows.append({"lane": CONSUMER, "kind": "duplicate" if event_id in seen else "handled",
                     "n": int(message["payload"]["n"]), "seq": int(message["seq"])})
        seen.add(event_id)
    if len(rows) > MAX_STEPS:
        raise ValueError(f"an outbox picture shows at most {MAX_STEPS} steps, got {len(rows)}")
    frame = pd.DataFrame(rows, columns=["lane", "kind", "n", "seq"])
    frame.insert(0, "step", range(len(frame)))
    frame.attrs["clocks"] = {name: float(check_finite(at, "relay second")) for name, at, _, _ in relays}
    return frame


def plot_outbox(steps: pd.DataFrame, *, lease: float,
                title: str = "outbox：同一事务写下意图，中继在提交之后发布，崩溃在发布与标记之间") -> Figure:
    """The figure of `outbox_steps`: one lane per participant, a marker per step, an arrow
    from each publish to the broker, the killed relay's lease as a bar."""
    check_finite(lease, "lease", above=0)
    clocks = steps.attrs.get("clocks", {})
    lanes = [BUSINESS, *clocks, BROKER, CONSUMER]
    y = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    fig = Figure(figsize=(10, 1.0 + 0.75 * len(lanes)))
    ax = fig.subplots()
    killed = steps[steps.kind == "kill"]
    for _, kill in killed.iterrows():  # the dead relay's claim holds until its lease ends
        lane_steps = steps[steps.lane == kill.lane]
        after = steps[(steps.step > kill.step) & (steps.lane.isin(clocks))
                      & (steps.lane.map(lambda name: clocks.get(name, 0.0))
                         >= clocks[kill.lane] + lease)]
        end = after.step.min() if len(after) else steps.step.max()
        ax.barh(y[kill.lane], end - lane_steps.step.min() + 0.5, left=lane_steps.step.min() - 0.5,
                height=0.35, color="#fdd0a2", edgecolor="#e6550d", zorder=1)
        ax.annotate(f"三个事件归它：租约 {lease:g} 秒，未标记", (lane_steps.step.min() - 0.4,
                    y[kill.lane] + 0.3), fontsize=8, color="#e6550d")
    previous: dict[str, tuple[int, bool]] = {}  # lane: (its last step, label above it)
    for _, s in steps.iterrows():
        colour = _COLOURS[s.kind]
        last, above = previous.get(s.lane, (-2, True))
        above = not above if s.step - last == 1 else False  # neighbours: labels alternate
        previous[s.lane] = (s.step, above)
        marker = {"kill": "X", "duplicate": "x", "nothing": "o", "commit": "s"}.get(s.kind, "o")
        face = "none" if s.kind == "nothing" else colour
        ax.plot(s.step, y[s.lane], marker=marker, markersize=10, linestyle="none",
                markerfacecolor=face, markeredgecolor=colour, zorder=3)
        word = _WORDS[s.kind]
        if s.kind in ("commit", "publish", "accepted", "handled", "duplicate"):
            word = f"{word} n={int(s.n)}"
        elif s.kind == "mark":
            word = f"{word} {int(s.n)} 个"
        ax.annotate(word, (s.step, y[s.lane] + (0.2 if above else -0.38)), fontsize=7.5,
                    ha="center", color=colour)
        if s.kind == "publish":
            ax.annotate("", xy=(s.step + 1, y[BROKER] + 0.15), xytext=(s.step, y[s.lane] - 0.15),
                        arrowprops={"arrowstyle": "->", "color": "#a1d99b"})
    labels = {BUSINESS: "业务事务\n（任务行 + outbox 行）", BROKER: "代理\n（确认即保留）",
              CONSUMER: "消费方\n（inbox 按事件 id）"}
    labels |= {name: f"{name}\n（时钟第 {at:g} 秒）" for name, at in clocks.items()}
    ax.set_yticks([y[lane] for lane in lanes], [labels[lane] for lane in lanes], fontsize=8.5)
    ax.set_ylim(-0.8, len(lanes) - 0.4)
    ax.set_xlim(-0.8, steps.step.max() + 0.8)
    ax.set_xticks([])
    ax.set_xlabel("本次运行中各步发生的先后（从左到右）")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _seconds(value: datetime, since: datetime) -> float:
    return (check_instance(value, "time", datetime) - since).total_seconds()


def deadletter_frame(history: Iterable[Mapping[str, Any]], audit: Iterable[Mapping[str, Any]], *,
                     since: datetime) -> pd.DataFrame:
    """One row per job and event: job_id, event (`failed`, `retried`, `claimed`), at (seconds
    since `since`), attempt, and for `failed` the error. `history`: `jobs.history(conn)`;
    `audit`: `jobs.audit(conn)` (its `retry` rows)."""
    check_instance(since, "since", datetime)
    rows = []
    for a in history:
        if a["attempt"] > 1 or a["outcome"] is None:
            rows.append({"job_id": a["job_id"], "event": "claimed", "attempt": a["attempt"],
                         "at": _seconds(a["started_at"], since), "error": None})
        if a["outcome"] == "failed":
            rows.append({"job_id": a["job_id"], "event": "failed", "attempt": a["attempt"],
                         "at": _seconds(a["finished_at"], since), "error": a["error"]})
    for entry in audit:
        if entry["action"] == "retry":
            rows.append({"job_id": entry["job_id"], "event": "retried", "attempt": None,
                         "at": _seconds(entry["at"], since), "error": None})
    if len(rows) > MAX_STEPS:
        raise ValueError(f"a dead-letter picture shows at most {MAX_STEPS} events, got {len(rows)}")
    order = {"failed": 0, "retried": 1, "claimed": 2}
    frame = pd.DataFrame(rows, columns=["job_id", "event", "attempt", "at", "error"])
    frame["attempt"] = frame["attempt"].astype("Int64")
    return frame.sort_values(["job_id", "at", "event"], key=lambda c: c.map(order)
                             if c.name == "event" else c).reset_index(drop=True)


def plot_deadletters(frame: pd.DataFrame, *, marks: Mapping[str, float], end: float,
                     title: str = "死信：尝试用尽 → 留在 failed → 带过滤与 until 的批量重试") -> Figure:
    """The figure of `deadletter_frame`: a lane per job, a red span while it is failed (a
    dead letter), a grey span after the bulk retry, an X for the attempt that used up its
    attempts, a circle for the next attempt; `marks` are the operator's moments (label:
    second), drawn as dotted lines; `end` is where the picture stops (seconds)."""
    check_finite(end, "end", above=0)
    jobs = sorted(frame.job_id.unique())
    y = {job: len(jobs) - 1 - i for i, job in enumerate(jobs)}
    fig = Figure(figsize=(9, 1.4 + 0.55 * len(jobs)))
    ax = fig.subplots()
    for job in jobs:
        events = frame[frame.job_id == job]
        failed = events[events.event == "failed"]
        retried = events[events.event == "retried"]
        for _, f in failed.iterrows():
            stop = retried[retried["at"] >= f["at"]]["at"].min() if len(retried) else end
            stop = end if pd.isna(stop) else stop
            ax.barh(y[job], stop - f["at"], left=f["at"], height=0.4, color="#fcbba1",
                    edgecolor="#de2d26", zorder=1)
            ax.plot(f["at"], y[job], marker="X", color="#de2d26", markersize=9, zorder=3)
            late = f["at"] > end * 0.6  # near the right edge: the label goes to its left
            ax.annotate(str(f["error"])[:40] + f"（第 {int(f['attempt'])} 次尝试）",
                        (f["at"] + end * (-0.01 if late else 0.01), y[job] + 0.25), fontsize=7.5,
                        color="#a50f15", ha="right" if late else "left")
        for _, r in retried.iterrows():
            ax.barh(y[job], end - r["at"], left=r["at"], height=0.4, color="#d9d9d9",
                    edgecolor="#737373", zorder=1)
            ax.annotate("批量重试 → pending", (r["at"] + end * 0.01, y[job] - 0.42), fontsize=7.5,
                        color="#525252")
        for _, c in events[events.event == "claimed"].iterrows():
            ax.barh(y[job], end - c["at"], left=c["at"], height=0.4, color="#9ecae1",
                    edgecolor="#3182bd", zorder=2)
            ax.plot(c["at"], y[job], marker="o", color="#3182bd", markersize=8, zorder=3)
            ax.annotate(f"第 {int(c['attempt'])} 次尝试（运行中）", (c["at"] - end * 0.01, y[job] + 0.25), fontsize=7.5,
                        color="#3182bd", ha="right")
    for label, at in marks.items():
        ax.axvline(check_finite(at, "mark"), color="#636363", linestyle=":", linewidth=1.2)
        ax.annotate(check_text(label, "mark label", limit=40), (at + end * 0.005, len(jobs) - 0.35),
                    fontsize=8, color="#636363", ha="left")
    ax.legend(handles=[Patch(facecolor=c, edgecolor=e, label=w) for c, e, w in (
        ("#fcbba1", "#de2d26", "在死信里（failed）"), ("#d9d9d9", "#737373", "重试后待领取（pending）"),
        ("#9ecae1", "#3182bd", "运行中"))], loc="lower left", fontsize=7.5, ncols=3)
    ax.set_yticks(list(y.values()), [f"任务 {job}" for job in y])
    ax.set_ylim(-1.5, len(jobs) - 0.1)
    ax.set_xlim(-end * 0.03, end)
    ax.set_xlabel("秒（数据库时钟，从第一批失败起）")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_cancel(times: Mapping[str, float], *, lease: float, heartbeat: float,
                title: str = "取消一个运行中的任务：工作者收到通知即续租，发现租约已不在") -> Figure:
    """Cancelling a running job on a time axis (milliseconds since the handler started, a
    log scale: the cancel is heard within milliseconds, the lease would last seconds).
    `times`: `cancelled` and `woken` from `procs.cancelling.cancel_while_running`; `lease`
    and `heartbeat`: the worker's lease and the period of its renewals (seconds)."""
    cancelled = check_finite(times["cancelled"], "cancelled", above=0) * 1000
    woken = check_finite(times["woken"], "woken", minimum=cancelled / 1000) * 1000
    lease_ms = check_finite(lease, "lease", above=0) * 1000
    beat_ms = check_finite(heartbeat, "heartbeat", above=0) * 1000
    start = min(0.1, cancelled / 10)  # the handler starts at 0, drawn at the axis's left end
    fig = Figure(figsize=(9, 2.9))
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.barh(0, lease_ms - start, left=start, height=0.35, color="#fdd0a2", edgecolor="#e6550d")
    ax.annotate(f"没有取消时，租约持续到第 {lease:g} 秒", (lease_ms * 0.95, 0.25), fontsize=8,
                color="#e6550d", ha="right")
    ax.barh(1, woken - start, left=start, height=0.35, color="#9ecae1", edgecolor="#3182bd")
    ax.plot(woken, 1, marker="X", color="#de2d26", markersize=10)
    ax.annotate(f"醒来（reason = lost），{woken:.0f} 毫秒；交回的结果被令牌拒绝", (woken * 1.15, 1.22),
                fontsize=8, color="#de2d26")
    ax.plot(cancelled, 2, marker="o", color="#636363", markersize=9)
    ax.annotate(f"jobs.cancel 提交，{cancelled:.0f} 毫秒", (cancelled * 1.15, 2.2), fontsize=8,
                color="#636363")
    ax.axvline(beat_ms, color="#756bb1", linestyle=":", linewidth=1.3)
    ax.annotate("第一次定期续租", (beat_ms * 0.95, 2.45), fontsize=8, color="#756bb1", ha="right")
    ax.set_yticks([0, 1, 2], ["租约", "工作者（处理函数）", "用户"])
    ax.set_ylim(-0.6, 2.8)
    ax.set_xlim(start * 0.8, lease_ms * 1.1)
    ax.set_xlabel("毫秒（从处理函数开始运行起，对数刻度；本次运行的实测时刻）")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
