"""The slow, deterministic "model call" that the course's caches and jobs wrap.

No network and no randomness: the summary is a pure function of the text and language,
the delay is a parameter, and failures are injected by hand. It counts its calls, so a
notebook can assert "three readers, one model call".
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from ...checks import check_int, check_seconds, check_text

__all__ = ["Summariser", "SummariserError", "summarise_text"]


class SummariserError(RuntimeError):
    """The simulated model call failed (an injected, transient failure)."""


def summarise_text(text: str, language: str = "zh") -> str:
    """The summary the model would return: the first clause, then the length in characters."""
    check_text(text, "text", limit=1_000_000)
    first = text.replace("；", "。").replace("，", "。").split("。")[0].strip()
    if language == "zh":
        return f"摘要：{first}……（全文 {len(text)} 字）"
    if language == "en":
        return f"Summary: {first}... ({len(text)} characters)"
    raise ValueError(f"unsupported language {language!r} (use 'zh' or 'en')")


class Summariser:
    """A simulated model with a delay and injectable failures.

    `delay` is in seconds; `sleep`/`asleep` default to the real sleeps, and tests pass
    no-op or manual-clock versions. `fail_next(n)` makes the next n calls raise.
    """

    def __init__(
        self,
        *,
        delay: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.delay = check_seconds(delay, "delay", allow_zero=True)
        self._sleep = sleep
        self.calls = 0
        self.inputs: list[tuple[str, str]] = []
        self.failed_calls: list[int] = []  # the numbers (1, 2, ...) of the calls that raised
        self._failures: deque[Exception] = deque()

    def fail_next(self, times: int = 1, error: Exception | None = None) -> None:
        """Make the next `times` calls raise `error` (a SummariserError by default)."""
        check_int(times, "times", minimum=0)
        for _ in range(times):
            self._failures.append(error or SummariserError("simulated model failure"))

    def _begin(self, text: str, language: str) -> int:
        self.calls += 1
        self.inputs.append((text, language))
        return self.calls

    def _end(self, call: int, text: str, language: str) -> str:
        if self._failures:
            self.failed_calls.append(call)
            raise self._failures.popleft()
        return summarise_text(text, language)

    def summarise(self, text: str, language: str = "zh") -> str:
        """Blocking call: wait `delay` seconds, then return the summary or raise."""
        call = self._begin(text, language)
        if self.delay:
            self._sleep(self.delay)
        return self._end(call, text, language)

    async def asummarise(self, text: str, language: str = "zh") -> str:
        """The same call for asyncio code (the cache chapters' loaders)."""
        call = self._begin(text, language)
        await asyncio.sleep(self.delay)  # also yields once when delay == 0
        return self._end(call, text, language)
