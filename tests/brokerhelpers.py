"""What the broker tests share: a bounded wait for a state, and handlers for a worker process."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "") -> object:
    """Poll `condition` until it is truthy; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g} s: {what}")
        time.sleep(0.02)
    return value


def double(payload):
    """A handler for `cachequeue worker --handlers brokerhelpers:HANDLERS` (tests/ on PYTHONPATH)."""
    return {"twice": 2 * payload["n"]}


HANDLERS = {"double": double}
