"""One request's life through the HTTP service on one time axis (chapter 07): the client's
POST and its 202, the event stream's events as they arrive, the worker's claim and finish
from its own log lines.

`RequestStory.note` records a moment on the wall clock (now, or a worker log line's UTC
`time`); `follow(feed, lane)` notes every event of an event stream as it arrives, in a
thread of its own, while the cell goes on (stops a database, claims by hand); `frame()`
gives seconds since the first moment, and `draw()` the lanes. Moments
come from the run itself, so the picture is as true as the clocks: the worker's lines
carry milliseconds, the notebook's moments microseconds, on the same machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...checks import check_text
from .eventlanes import Mark, Span, draw_lanes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["Following", "RequestStory"]


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

    def follow(self, feed: Iterable[Any], lane: str) -> Following:
        """Note each event of `feed` (an `iter_sse()` iterator: items with `.id` and
        `.event`) in `lane` when it arrives, in a daemon thread, until the stream ends."""
        return Following(self, feed, check_text(lane, "lane", limit=20))

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


class Following:
    """A stream read in a thread (`RequestStory.follow`): `events`, the (id, event) pairs
    so far; `wait(count)` until that many arrived; `join()` until the stream ended."""

    def __init__(self, story: RequestStory, feed: Iterable[Any], lane: str) -> None:
        self.events: list[tuple[str, str]] = []
        self._story, self._feed, self._lane = story, feed, lane
        self._changed = threading.Condition()
        self._error: BaseException | None = None
        self._done = False
        self._thread = threading.Thread(target=self._run, name="follow", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for sse in self._feed:
                with self._changed:
                    self._story.note(self._lane, sse.event)
                    self.events.append((sse.id, sse.event))
                    self._changed.notify_all()
        except BaseException as exc:  # handed to the caller in wait() and join()
            self._error = exc
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"the stream failed: {self._error!r}") from self._error

    def wait(self, count: int, timeout: float = 30.0) -> list[tuple[str, str]]:
        """The events once `count` have arrived; TimeoutError if they do not in time."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.events) >= count or self._done, timeout)
            self._raise()
            if len(self.events) < count:
                raise TimeoutError(f"{len(self.events)} of {count} events arrived: "
                                   f"{self.events}")
            return list(self.events)

    def join(self, timeout: float = 30.0) -> list[tuple[str, str]]:
        """Every event, once the stream has ended; TimeoutError if it is still open."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the stream is still open after {timeout:g} s: {self.events}")
        self._raise()
        return list(self.events)
