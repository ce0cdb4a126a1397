"""Concurrent readers of one cold key and the one load they share, recorded on a manual
clock, and their picture (chapter 01).

`record_coalescing` runs a real `LoadingCache`: readers arrive one by one while the first
reader's load is held open by a gate, the load returns at `load_until`, and one more reader
arrives afterwards. Every moment is read from the cache's own clock. `draw_coalescing` turns
the recorded events into lanes (`eventlanes.draw_lanes`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...cache import LoadingCache
from ...checks import check_finite
from ...clock import ManualClock
from .eventlanes import Mark, Span, draw_lanes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["MODEL", "draw_coalescing", "record_coalescing"]

MODEL = "模型调用"


async def record_coalescing(arrivals: Sequence[float] = (0.0, 1.0, 2.0, 3.0), *,
                            load_until: float = 5.0, late: float = 6.0,
                            ttl: float = 30.0) -> tuple[pd.DataFrame, LoadingCache]:
    """Readers `读者 1..n` arrive at `arrivals` (increasing) on one cold key; the load that
    the first one starts returns at `load_until`; `读者 n+1` arrives at `late`. Returns the
    events (`who`, `what`, `at`: 到达 / 开始加载 / 加载完成 / 拿到结果) and the cache."""
    import pandas as pd

    times = [check_finite(a, "arrival", minimum=0) for a in arrivals]
    if not times or times != sorted(times):
        raise ValueError(f"arrivals must be a non-empty increasing sequence, got {arrivals!r}")
    check_finite(load_until, "load_until", above=times[-1])
    check_finite(late, "late", above=load_until)
    clock, events = ManualClock(), []
    cache, gate = LoadingCache(clock=clock), asyncio.Event()

    def record(who: str, what: str) -> None:
        events.append({"who": who, "what": what, "at": clock()})

    async def body() -> str:
        await gate.wait()
        record(MODEL, "加载完成")
        return "摘要"

    def load():  # called by the cache when the load starts, before its first await
        record(MODEL, "开始加载")
        return body()

    async def reader(name: str) -> str:
        record(name, "到达")
        value = await cache.get_or_load("doc:42", load, ttl=ttl)
        record(name, "拿到结果")
        return value

    tasks = []
    for number, at in enumerate(times, start=1):
        clock.advance(at - clock())
        tasks.append(asyncio.create_task(reader(f"读者 {number}")))
        await asyncio.sleep(0)  # the reader checks the cache now, at its arrival
    clock.advance(load_until - clock())
    gate.set()
    await asyncio.gather(*tasks)
    clock.advance(late - clock())
    await reader(f"读者 {len(times) + 1}")
    return pd.DataFrame(events), cache


def draw_coalescing(events: pd.DataFrame) -> Figure:
    """Each reader's wait from arrival to result, the model call as one bar."""
    spans, marks = [], []
    started = events.loc[(events["who"] == MODEL) & (events["what"] == "开始加载"), "at"]
    for who, rows in events.groupby("who", sort=False):
        at = dict(zip(rows["what"], rows["at"], strict=True))
        if who == MODEL:
            spans.append(Span(who, at["开始加载"], at["加载完成"], "load", "一次加载"))
            continue
        if at["拿到结果"] > at["到达"]:
            spans.append(Span(who, at["到达"], at["拿到结果"], "wait", "等同一个加载"))
            first = len(started) and at["到达"] == started.iloc[0] and not any(
                m.label == "到达，发起加载" for m in marks)
            marks.append(Mark(who, at["到达"], "到达，发起加载" if first else "到达，加入"))
        else:
            marks.append(Mark(who, at["到达"], "命中"))
    lanes = [w for w in dict.fromkeys(events["who"]) if w != MODEL] + [MODEL]
    return draw_lanes(spans, marks, lanes=lanes, title="同一个冷键的并发读者共享一次加载")
