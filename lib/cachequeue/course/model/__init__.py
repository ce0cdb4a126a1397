"""The job queue as an in-memory state machine on a manual clock, replayed in lockstep with PostgreSQL.

- `lockstep`: Replay one sequence of queue operations on QueueModel and on PostgreSQL, and compare.
- `mutants`: Queue models that are wrong on purpose, each on one boundary: the comparison must catch them.
- `queue_model`: The chapter's job queue as an in-memory state machine with an explicit clock.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["lockstep", "mutants", "queue_model"]
