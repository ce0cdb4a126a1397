"""Queue models that are wrong on purpose, each on one boundary: the comparison must catch them.

Chapter 05 compares `QueueModel` with PostgreSQL step by step. A comparison that never
disagrees proves nothing unless it is seen to fail, so this module keeps variants of the
model that break exactly one rule, at exactly one instant, and are right everywhere else:

- `LateExpiryModel`: a lease is still valid at `locked_until` itself (the rule: it has
  expired when `locked_until <= now`), so an old holder's report at that instant succeeds.
- `RetryTooLateModel`: a job waiting for its retry is claimable only after `run_after`,
  not at it (the rule: claimable when `run_after <= now`). New jobs are not affected.

Both are for the lockstep replay (`lockstep.replay(conn, steps, model_class=...)`) and
for the chapter's exercise; nothing else uses them.
"""

from __future__ import annotations

from collections.abc import Iterable

from .queue_model import ModelClaim, QueueModel

__all__ = ["LateExpiryModel", "RetryTooLateModel"]

# Far below the database's resolution (timestamptz keeps microseconds) and any step the
# lockstep sequences take, so the variants differ from the rule only at the boundary.
_EPSILON = 1e-7


class LateExpiryModel(QueueModel):
    """Wrong on the lease boundary: at the instant `locked_until` the lease still counts."""

    def _owned(self, claim: ModelClaim, now: float):
        return super()._owned(claim, now - _EPSILON)


class RetryTooLateModel(QueueModel):
    """Wrong on the backoff boundary: a retried job (attempts > 0) whose `run_after` is
    exactly now is not claimable yet; one instant later it is. First attempts are right."""

    def claim_many(self, limit: int, *, lease: float = 30.0, kinds: Iterable[str] | None = None,
                   worker: str | None = None) -> list[ModelClaim]:
        now = self.clock()
        on_the_boundary = [row for row in self._rows.values()
                           if row["state"] == "pending" and row["attempts"] > 0
                           and row["run_after"] == now]
        for row in on_the_boundary:  # pushed just past now for this one call
            row["run_after"] = now + _EPSILON
        try:
            return super().claim_many(limit, lease=lease, kinds=kinds, worker=worker)
        finally:
            for row in on_the_boundary:
                row["run_after"] = now  # restored exactly: it was equal to now
