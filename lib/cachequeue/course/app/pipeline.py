"""A three-stage summary job for the checkpoint lab: split -> summarise parts -> combine.

`Pipeline(text, crash_at="part:2")` is a job body whose stages count their calls in `calls`
(the stand-in for a side effect: a model call billed per part). `run(conn, claim)` runs it
with checkpoints (`queue.checkpoints`); `run_without_checkpoints()` runs it from the top, as
a job without them does after every crash. `crash_at` names a stage that raises `Crash`
before doing anything, once: the worker died there.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg

from ...queue import checkpoints
from ...queue.jobs import Claim

__all__ = ["Crash", "Pipeline"]


class Crash(Exception):
    """The worker died in this stage (simulated)."""


class Pipeline:
    """The stages of one summary job, with a call counter and an optional crash."""

    def __init__(self, text: str, *, crash_at: str | None = None) -> None:
        self.text = text
        self.crash_at = crash_at
        self.calls: Counter[str] = Counter()

    def _do(self, stage: str, value: Any) -> Any:
        if stage == self.crash_at:
            self.crash_at = None  # a crash happens once; the next attempt gets through
            raise Crash(f"worker died in stage {stage}")
        self.calls[stage] += 1
        return value

    def split(self) -> list[str]:
        return self._do("split", [p for p in self.text.split("。") if p])

    def summarise(self, i: int, part: str) -> str:
        return self._do(f"part:{i}", part[:4])

    def combine(self, parts: list[str]) -> str:
        return self._do("combine", "；".join(parts))

    def run_without_checkpoints(self) -> str:
        parts = self.split()
        return self.combine([self.summarise(i, p) for i, p in enumerate(parts)])

    def run(self, conn: psycopg.Connection, claim: Claim) -> tuple[str, checkpoints.Checkpoints]:
        """Run with checkpoints; returns the result and the Checkpoints (ran, skipped)."""
        cp = checkpoints.Checkpoints(conn, claim)
        parts = cp.stage("split", self.split)
        summaries = [cp.stage(f"part:{i}", lambda i=i, p=p: self.summarise(i, p))
                     for i, p in enumerate(parts)]
        return cp.stage("combine", lambda: self.combine(summaries)), cp
