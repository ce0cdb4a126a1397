"""What the broker tests share (tests/integration/broker, tests/chaos): a BrokerWorker running
in a thread of the test, and a bounded wait for a state."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from cachequeue.broker import BrokerWorker


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "") -> object:
    """Poll `condition` until it is truthy; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g} s: {what}")
        time.sleep(0.02)
    return value


class Running:
    """A BrokerWorker in a thread: `stop()` joins it and returns its stats."""

    def __init__(self, worker: BrokerWorker) -> None:
        self.worker = worker
        self.stats: dict[str, int] | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_for(lambda: worker.ready.is_set() or self.error, 30, "worker ready")
        if self.error:
            raise self.error

    def _run(self) -> None:
        try:
            self.stats = self.worker.run()
        except BaseException as exc:
            self.error = exc

    def stop(self) -> dict[str, int]:
        self.worker.stop()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the worker did not stop"
        if self.error:
            raise self.error
        return self.stats


def double(payload):
    """A handler for `cachequeue worker --handlers brokerhelpers:HANDLERS` (tests/ on PYTHONPATH)."""
    return {"twice": 2 * payload["n"]}


HANDLERS = {"double": double}
