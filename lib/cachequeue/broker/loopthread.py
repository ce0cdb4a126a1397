"""An asyncio event loop in a thread of its own, for synchronous callers of async clients.

A notebook cell already runs inside Jupyter's loop (asyncio.run refuses there) and the
outbox relay calls a plain function: `LoopThread().run(coro)` runs `coro` on the private
loop and waits for its result, from any thread. `close()` stops the loop and joins.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..checks import check_seconds

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    def __init__(self, name: str = "cachequeue-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run `coro` on the loop; its result (or its exception) within `timeout` seconds."""
        check_seconds(timeout, "timeout")
        if not self._thread.is_alive():
            coro.close()
            raise RuntimeError("the loop thread is closed")
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run() called from its own loop: await instead")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        if not self.loop.is_running():
            self.loop.close()
