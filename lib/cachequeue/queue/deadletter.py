"""Dead letters: failed jobs kept with their reasons, and a filtered, audited bulk retry.

A failed job stays in `jobs` (state 'failed', `last_error`) with every attempt in
`job_attempts` (`jobs.history`): the dead-letter queue is a filter over the record, not a
second copy of it. After an outage the operator retries what the outage failed, not
everything:

    dead = deadletter.failed(conn, Filter(kind="summarise", error_class="TimeoutError"))
    plan = deadletter.bulk_retry(conn, Filter(kind="summarise", error_class="TimeoutError"),
                                 actor="ops", reason="vendor outage 09:00-09:20", dry_run=True)
    done = deadletter.bulk_retry(conn, same_filter, actor="ops", reason="...")

A dry run lists the job ids a real run would retry now and changes nothing. A real run lists
again with the same query (a job that failed after the dry run and matches is retried too:
bound the filter with `until=` the moment of the dry run to retry only what it showed) and
hands exactly those rows to the queue's retry statement (`jobs.query("retry")`), which
retries them in one statement, each with an audit row naming the actor, the reason and the
filter; a job that another operator retried meanwhile, or that failed again since it was
listed, is left alone. The filter is in `sql/deadletter.sql`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from .. import sqlfile
from ..checks import check_bool, check_instance, check_int, check_text
from .jobs import query as jobs_query

__all__ = ["Filter", "bulk_retry", "failed"]

_QUERIES = sqlfile.load(__package__, "deadletter.sql")


@dataclass(frozen=True)
class Filter:
    """Which failed jobs: None means any. `error_class` is the exception type that starts
    `last_error` ("TimeoutError: vendor did not answer" -> "TimeoutError"); `since` and
    `until` bound finished_at (until excluded)."""

    kind: str | None = None
    error_class: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    tenant_id: int | None = None


def _params(where: Filter, limit: int) -> dict[str, Any]:
    check_instance(where, "where", Filter)
    for name in ("since", "until"):
        value = getattr(where, name)
        if value is not None:
            check_instance(value, f"where.{name}", datetime)
    return {"kind": check_text(where.kind, "where.kind", optional=True),
            "error_class": check_text(where.error_class, "where.error_class", optional=True),
            "since": where.since, "until": where.until,
            "tenant_id": None if where.tenant_id is None else check_int(where.tenant_id,
                                                                        "where.tenant_id"),
            "limit": check_int(limit, "limit", minimum=1)}


def failed(conn: psycopg.Connection, where: Filter = Filter(), *,
           limit: int = 1000) -> list[dict[str, Any]]:
    """Failed jobs matching `where`, oldest failure first: job_id, tenant_id, kind, attempts,
    max_attempts, last_error, error_class, finished_at."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_QUERIES["failed"].sql, _params(where, limit)).fetchall()


def bulk_retry(conn: psycopg.Connection, where: Filter, *, actor: str, reason: str,
               dry_run: bool = False, limit: int = 1000) -> list[int]:
    """Retry the failed jobs matching `where` (at most `limit`); the job ids, in id order.

    With `dry_run`, nothing changes and the ids are those a real run would retry now. A
    filter that matches every failed job is refused unless `where` names at least one
    field: "replay everything" should be a decision, not a default.
    """
    if where == Filter():
        raise ValueError("bulk_retry needs a filter (kind, error_class, since/until or "
                         "tenant_id); an empty one would replay every failed job")
    _params(where, limit)  # a bad filter is refused before anything else is checked
    check_bool(dry_run, "dry_run")
    audit = {"actor": check_text(actor, "actor"),
             "reason": check_text(reason, "reason", limit=1000)}
    listed = failed(conn, where, limit=limit)
    if dry_run:
        return sorted(row["job_id"] for row in listed)
    described = {k: (v.isoformat() if isinstance(v, datetime) else v)
                 for k, v in asdict(where).items() if v is not None}
    # The failures as listed: each job with its tenant and the finished_at that was seen.
    params = audit | {"job_ids": [row["job_id"] for row in listed],
                      "tenant_ids": [row["tenant_id"] for row in listed],
                      "failed_at": [row["finished_at"] for row in listed],
                      "attempts": None, "filter": json.dumps(described)}
    return list(conn.execute(jobs_query("retry").sql, params).fetchone()[0])
