"""The worker command's LineHandler: lines in order, a turn's lines held for its owner's
flush, other threads' lines written at once, and the direct path (no LogRecord) only when
nothing else listens."""

from __future__ import annotations

import io
import logging
import threading

import pytest

from cachequeue.queue import logline
from cachequeue.queue.logline import LOGGER, LineHandler, info, info_each, parse


class Recording(io.StringIO):
    """A stream that counts its flushes (what reached the file)."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []

    def flush(self) -> None:
        self.flushed.append(self.getvalue())


@pytest.fixture
def handler():
    saved = (LOGGER.handlers[:], LOGGER.level, LOGGER.propagate)
    stream = Recording()
    h = LineHandler(stream)
    LOGGER.handlers[:] = [h]
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False
    try:
        yield h, stream
    finally:
        LOGGER.handlers[:], LOGGER.level, LOGGER.propagate = saved


def lines(stream):
    return [parse(line) for line in stream.getvalue().splitlines()]


def test_every_line_is_written_at_once_until_a_thread_flushes(handler):
    h, stream = handler
    info("w1", "claimed", job=7, attempt=1)
    assert stream.flushed and "claimed job=7" in stream.flushed[-1]
    assert lines(stream)[0] == {"time": lines(stream)[0]["time"], "worker": "w1",
                                "event": "claimed", "job": 7, "attempt": 1}


def test_the_owner_s_lines_wait_for_its_flush_and_keep_their_order(handler):
    h, stream = handler
    logline.flush_turn()  # this thread owns the buffer now
    flushes = len(stream.flushed)
    info_each("w1", [("finished", 1, 1), ("rejected", 2, 3), ("finished", 3, 1)])
    info("w1", "prefetched", jobs=3)
    assert len(stream.flushed) == flushes, "held until the turn's flush"
    other = threading.Thread(target=lambda: info("w1", "started", job=4, attempt=1))
    other.start()
    other.join()
    assert len(stream.flushed) == flushes + 1, "another thread's line goes out at once"
    assert [(e["event"], e.get("job")) for e in lines(stream)] == [
        ("finished", 1), ("rejected", 2), ("finished", 3), ("prefetched", None), ("started", 4)]
    assert lines(stream)[1]["attempt"] == 3


def test_lines_are_the_same_whichever_path_writes_them(handler):
    h, stream = handler
    info_each("w1", [("finished", 10, 2)])
    seen = []
    listener = logging.Handler()
    listener.emit = lambda record: seen.append(record.getMessage())
    LOGGER.addHandler(listener)  # someone else listens: records again, for both handlers
    info_each("w1", [("finished", 10, 2)])
    got = [line.split(" ", 1)[1] for line in stream.getvalue().splitlines()]
    assert got == ["w1 finished job=10 attempt=2"] * 2
    assert seen == ["w1 finished job=10 attempt=2"]
