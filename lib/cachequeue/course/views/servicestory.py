"""One request's life through the HTTP service on one time axis (chapter 07): the client's
POST and its 202, the event stream's events as they arrive, the worker's claim and finish
from its own log lines.

`RequestStory.note` records a moment on the wall clock (now, or a worker log line's UTC
`time`); `frame()` gives seconds since the first moment, and `draw()` the lanes. Moments
come from the run itself, so the picture is as true as the clocks: the worker's lines
carry milliseconds, the notebook's moments microseconds, on the same machine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...checks import check_text
from .eventlanes import Mark, Span, draw_lanes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["RequestStory"]


def _seconds(at: Any) -> float:
    """Epoch seconds of `at`: None (now), a datetime, or a worker log line's UTC time."""
    if at is None:
        return time.time()
    if isinstance(at, datetime):
        if at.tzinfo is None:
            raise ValueError("a moment must be timezone-aware")
        return at.timestamp()
    if isinstance(at, str):
        return datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    raise TypeError(f"a moment is None, a datetime or a log line's time, got {type(at).__name__}")


@dataclass
class RequestStory:
    """Moments of one request's life, in the order they are noted."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def note(self, lane: str, what: str, at: Any = None) -> None:
        """`what` happened in `lane` at `at` (default: now)."""
        check_text(lane, "lane", limit=20)
        check_text(what, "what", limit=30)
        self.rows.append({"lane": lane, "what": what, "epoch": _seconds(at)})

    def frame(self) -> pd.DataFrame:
        """lane, what, at (seconds since the earliest moment), sorted by `at`."""
        import pandas as pd

        if not self.rows:
            raise ValueError("nothing noted yet")
        frame = pd.DataFrame(self.rows)
        frame["at"] = frame["epoch"] - frame["epoch"].min()
        return frame.drop(columns="epoch").sort_values("at", kind="stable").reset_index(drop=True)

    def draw(self, *, spans: Sequence[tuple[str, str, str, str, str]] = (),
             title: str = "一个请求：202、推送的事件与工作者") -> Figure:
        """Marks for every moment; `spans` are (lane, from what, to what, kind, label) bars
        between two noted moments of that lane (kind as in `eventlanes.COLOURS`)."""
        frame = self.frame()
        at = {(r.lane, r.what): r.at for r in frame.itertuples()}
        missing = [(lane, w) for lane, start, end, _, _ in spans for w in (start, end)
                   if (lane, w) not in at]
        if missing:
            raise ValueError(f"spans name moments never noted: {missing}")
        bars = [Span(lane, at[(lane, start)], at[(lane, end)], kind, label)
                for lane, start, end, kind, label in spans]
        marks = [Mark(r.lane, r.at, r.what) for r in frame.itertuples()]
        return draw_lanes(bars, marks, title=title, lanes=list(dict.fromkeys(frame["lane"])),
                          width=8.0)
