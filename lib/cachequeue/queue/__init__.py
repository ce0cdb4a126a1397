"""The PostgreSQL job queue: production-shaped, with no teaching apparatus in it.

- `install(conn)` (from `schema`): the queue's tables in the current schema, once.
- `jobs`: submit, claim (one statement, FOR UPDATE SKIP LOCKED), heartbeat, finish, fail,
  release, cancel, retry, status. Its SQL is in `sql/queue.sql` (tables) and `sql/queries.sql`.
- `retry`: `RetryPolicy` (exponential backoff with full jitter) and the error classes.
- `single_pass`: one job handled start to end, `run_once` and `drain` (and their steps
  `execute`, `record`).
- `worker`: `Worker`, the long-running worker: handler threads, heartbeats, graceful
  shutdown with hand-back, reconnects, wake-up by LISTEN/NOTIFY; `Worker.run_once()` is its
  single pass. `inflight`: the jobs it holds (threads, reports, hand-back); `context`: the
  `JobContext` its handlers may take; `logline`: its one-line-per-event log.
- `registry`: the workers table (who runs, last heartbeat, jobs in hand), SQL in
  `sql/registry.sql`; `notify`: the jobs table's notification channel and a listener thread.
- `kinds`: the kinds a queue accepts (rows of job_kinds; a new queue accepts none until
  whoever runs the work registers them), SQL in `sql/kinds.sql`.
- `limits`: the queue's limits (payload size, lease, error text) and the checks of its inputs.
- Operating the queue (chapters 08, 09), each with its SQL in `sql/<module>.sql`: `metrics`
  (depth, oldest wait, rates, durations, ratios; bounded tenant labels), `fairness` (the
  fair claim, a per-tenant cap), `ratelimit` (a per-kind token bucket in the database),
  `outbox` (events written with the business change; relay; inbox dedup), `deadletter`
  (failed jobs by filter; audited bulk retry with a dry run), `checkpoints` (stages of a
  multi-stage job), `schedules` (periodic jobs from cron expressions, each fire time
  enqueued once by any number of schedulers; a missed-fire policy). Their tables and indexes are installed by each module's `install(conn)`.

This part imports only the ground floor (`cachequeue.checks`, `db`, `errors`, `sqlfile`, ...);
never `cachequeue.cache` or `cachequeue.course`.
"""

from . import (
    checkpoints,
    context,
    deadletter,
    fairness,
    inflight,
    jobs,
    kinds,
    limits,
    logline,
    metrics,
    notify,
    outbox,
    ratelimit,
    registry,
    retry,
    schedules,
    schema,
    single_pass,
    worker,
)
from .context import JobContext
from .jobs import Claim, JobStatus
from .retry import PermanentError, RetryableError, RetryPolicy
from .schema import install
from .worker import Worker

__all__ = [
    "Claim",
    "JobContext",
    "JobStatus",
    "PermanentError",
    "RetryPolicy",
    "RetryableError",
    "Worker",
    "checkpoints",
    "context",
    "deadletter",
    "fairness",
    "inflight",
    "install",
    "jobs",
    "kinds",
    "limits",
    "logline",
    "metrics",
    "notify",
    "outbox",
    "ratelimit",
    "registry",
    "retry",
    "schedules",
    "schema",
    "single_pass",
    "worker",
]
