"""Queue state as pandas DataFrames: jobs, attempts, and simulated retry schedules.

The same columns come from PostgreSQL (`jobs_frame(conn)`) and from the in-memory model
(`model_frame(model)`), so a notebook can show both side by side. Pass `epoch` (a
`ManualClock`'s epoch) to turn database timestamps into seconds on that clock, which keeps
tables short and identical from run to run.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from ... import sqlfile
from ...checks import check_int, check_seconds
from ...queue.retry import RetryPolicy

if TYPE_CHECKING:
    import pandas as pd

    from ..model.queue_model import QueueModel

__all__ = ["JOB_COLUMNS", "attempts_frame", "fetch_df", "jobs_frame", "model_frame", "peak",
           "retry_times", "state_counts"]

JOB_COLUMNS = ["job_id", "tenant_id", "kind", "state", "attempts", "max_attempts", "run_after",
               "locked_until", "finished_at", "last_error", "has_result"]
_TIMES = ("run_after", "locked_until", "finished_at", "started_at")


def _seconds(frame: pd.DataFrame, epoch: datetime | None) -> pd.DataFrame:
    """Timestamps -> seconds since `epoch` (missing ones stay None), if an epoch is given."""
    import pandas as pd

    if epoch is not None:
        for column in _TIMES:
            if column in frame:
                frame[column] = pd.Series(
                    [None if pd.isna(v) else round((v - epoch).total_seconds(), 6)
                     for v in frame[column]], index=frame.index, dtype=object)
    return frame


def _none(frame: pd.DataFrame) -> pd.DataFrame:
    """Missing values shown as None, the way the database and the model both say it."""
    return frame.astype(object).where(frame.notna(), None)


def fetch_df(conn: psycopg.Connection, query: Any, params: Any = None) -> pd.DataFrame:
    """Run a query and return its rows as a pandas DataFrame (column names from the query)."""
    import pandas as pd

    with conn.cursor() as cur:
        cur.execute(query, params)
        columns = [c.name for c in cur.description or []]
        return pd.DataFrame(cur.fetchall(), columns=columns)


def jobs_frame(conn: psycopg.Connection, *, epoch: datetime | None = None) -> pd.DataFrame:
    """Every job of the connection's schema, one row each (columns JOB_COLUMNS)."""
    frame = fetch_df(conn, sqlfile.load(__package__, "frames.sql")["jobs_table"].sql)
    return _none(_seconds(frame.astype(object), epoch))


def model_frame(model: QueueModel) -> pd.DataFrame:
    """The same table for a `QueueModel` (times are already readings of its clock)."""
    import pandas as pd

    results = model.results()
    rows = [{**{c: getattr(j, c, None) for c in JOB_COLUMNS}, "has_result": j.job_id in results}
            for j in model.jobs()]
    return _none(pd.DataFrame(rows, columns=JOB_COLUMNS).astype(object))


def state_counts(conn: psycopg.Connection) -> dict[str, int]:
    """{state: number of jobs} for every state, read from the jobs table."""
    return dict(conn.execute(sqlfile.load(__package__, "frames.sql")["state_counts"].sql).fetchall())


def attempts_frame(rows: Iterable[dict[str, Any]], *, epoch: datetime | None = None,
                   tokens: bool = False) -> pd.DataFrame:
    """Attempt rows (from `jobs.history` or `QueueModel.history`) as a DataFrame.

    Lease tokens are left out unless `tokens=True`: they are random in PostgreSQL.
    """
    import pandas as pd

    columns = ["job_id", "attempt", "worker", "started_at", "finished_at", "outcome", "error"]
    if tokens:
        columns.insert(2, "lease_token")
    frame = pd.DataFrame([{c: r[c] for c in columns} for r in rows], columns=columns)
    return _none(_seconds(frame.astype(object), epoch))


def retry_times(policy: RetryPolicy, *, jobs: int = 200, seed: int = 0,
                start: float = 0.0) -> pd.DataFrame:
    """When `jobs` jobs that all fail at `start` (and keep failing at once) are retried.

    One row per scheduled retry: job, attempt (the one that failed), at (seconds). Draws
    go attempt by attempt, job by job, from one `random.Random(seed)`; for attempt 1 that
    is the order in which a worker failing the whole batch calls `policy.delay`.
    """
    import pandas as pd

    check_int(jobs, "jobs", minimum=1)
    rng = random.Random(seed)
    now = [float(start)] * jobs
    rows = []
    for attempt in range(1, policy.max_attempts):
        for job in range(jobs):
            now[job] += policy.delay(attempt, rng)
            rows.append({"job": job, "attempt": attempt, "at": now[job]})
    return pd.DataFrame(rows, columns=["job", "attempt", "at"])


def peak(times: Iterable[float], width: float = 1.0) -> int:
    """The largest number of `times` that fall into one bucket [k*width, (k+1)*width)."""
    check_seconds(width, "width")
    counts: dict[int, int] = {}
    for t in times:
        bucket = int(t // width)
        counts[bucket] = counts.get(bucket, 0) + 1
    return max(counts.values(), default=0)
