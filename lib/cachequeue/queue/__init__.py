"""The PostgreSQL job queue: production-shaped, with no teaching apparatus in it.

- `jobs`: submit, claim (one statement, FOR UPDATE SKIP LOCKED), heartbeat, finish, fail,
  cancel, retry, status. Its SQL is in `sql/queue.sql` (tables) and `sql/queries.sql`.
- `retry`: `RetryPolicy` (exponential backoff with full jitter) and the error classes.
- `worker`: the single pass `run_once` and `drain`.
- `limits`: the queue's limits (payload size, lease, error text) and the checks of its inputs.

This part imports only the ground floor (`cachequeue.checks`, `db`, `errors`, `sqlfile`, ...);
never `cachequeue.cache` or `cachequeue.course`.
"""

from . import jobs, limits, retry, worker
from .jobs import Claim, JobStatus
from .retry import PermanentError, RetryableError, RetryPolicy

__all__ = [
    "Claim",
    "JobStatus",
    "PermanentError",
    "RetryPolicy",
    "RetryableError",
    "jobs",
    "limits",
    "retry",
    "worker",
]
