"""Probes for chapter 12's capstone: run a learner's function in fixed scenarios, report what it did.

Each `probe_*` calls one step's function on the sample data (the database steps inside a
transaction that is rolled back, so a probe leaves the chapter's tables as it found them)
and returns a plain dict of observations. The grader a check cell calls,
`graders.ch12.check_step(step, answer, *context)`, runs these probes.

`ServiceLoader` is a cache loader that asks the HTTP service for a summary and follows
the job to its end with the learner's step 5, so the steps compose into the feature.
`install(conn)` adds the capstone's table, `published_summaries` (one row per business
key), to a chapter schema. `MaxJitter` is a `random.Random` whose jitter always draws its
upper bound, so a retry delay equals the policy's ceiling and a check can compare it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg

from ... import db, sqlfile
from ...cache import LoadingCache, parse_key
from ...checks import check_callable, check_instance, check_int
from ...queue import PermanentError, jobs
from ..app.documents import DocumentStore

__all__ = ["MaxJitter", "ServiceLoader", "install", "timed", "outcome", "probe_key", "probe_metrics",
           "probe_publish", "probe_read", "probe_retry", "probe_submit", "query"]

query = sqlfile.load(__package__, "capstone.sql")
"""The named statements of `sql/capstone.sql`: `query("name").sql` to read, print or EXPLAIN."""
_AT = datetime(2030, 1, 1, tzinfo=UTC)  # the frozen database clock of probe_retry


def install(conn: psycopg.Connection) -> None:
    """Add the `published_summaries` table and the `probe` kind to the connection's schema;
    idempotent."""
    conn.execute(query("install").sql)


def outcome(call: Callable[[], Any]) -> Any:
    """`call()`'s value, or the name of the exception it raised (e.g. 'PermissionDenied')."""
    try:
        return call()
    except Exception as exc:
        return type(exc).__name__


class MaxJitter(random.Random):
    """Jitter that always draws the top of its range: `uniform(a, b)` returns b."""

    def uniform(self, a: float, b: float) -> float:
        return b


class ServiceLoader:
    """`await loader(document_id, version, template)`: the summary, computed by the service.

    It posts `POST /v1/documents/{id}/summaries`, follows the job's events with
    `follow(client, job_id, headers)` until the stream ends, and returns the summary from
    the job's status. The blocking HTTP calls run in a thread, so the event loop (and the
    readers waiting on the cache) keep running. A job that did not end `done`, or a summary
    of another version than the one asked for, raises RuntimeError: nothing is cached then.
    `jobs` lists the job ids it was given, one per load; `timings` has one dict per load
    with the `time.monotonic()` readings at its start, the 202, the end of the event stream
    and its end (the figure of step 5 draws them beside the readers' `timed` intervals).
    """

    def __init__(self, client: Any, headers: dict[str, str],
                 follow: Callable[[Any, int, dict[str, str]], Any]) -> None:
        self.client = client
        self.headers = dict(headers)
        self.follow = check_callable(follow, "follow")
        self.jobs: list[int] = []
        self.timings: list[dict[str, float]] = []

    async def __call__(self, document_id: int, version: int, template: str) -> str:
        return await asyncio.to_thread(self._load, document_id, version, template)

    def _load(self, document_id: int, version: int, template: str) -> str:
        timing = {"start": time.monotonic()}
        answer = self.client.post(f"/v1/documents/{document_id}/summaries",
                                  json={"template": template}, headers=self.headers)
        answer.raise_for_status()
        timing["accepted"] = time.monotonic()
        job_id = answer.json()["id"]
        self.jobs.append(job_id)
        self.follow(self.client, job_id, self.headers)
        timing["followed"] = time.monotonic()
        status = self.client.get(f"/v1/jobs/{job_id}", headers=self.headers).json()
        timing["end"] = time.monotonic()
        self.timings.append(timing)
        if status["state"] != "done":
            raise RuntimeError(f"job {job_id} ended {status['state']}: {status['last_error']}")
        if status["output"]["version"] != version:
            raise RuntimeError(f"job {job_id} summarised version {status['output']['version']}, "
                               f"not {version}")
        return status["output"]["summary"]


async def timed(read: Any) -> tuple[Any, float, float]:
    """`(value, started, answered)`: await `read` between two `time.monotonic()` readings."""
    started = time.monotonic()
    value = await read
    return value, started, time.monotonic()


def _parsed(key: Any) -> dict[str, Any] | None:
    try:
        return parse_key(key)
    except (TypeError, ValueError):
        return None


def probe_key(summary_key: Callable[..., str]) -> dict[str, Any]:
    """Step 1: `summary_key(store, user_id, document_id, template)` on the sample data.

    Keys of Li Lei (11, member), Han Mei (12, member) and Wang Min (10, admin) for document
    42; refusals for Zhao Lv (20, other tenant), an admins-only document (43) and a deleted
    one (44); the key after document 42 gets a new version.
    """
    check_callable(summary_key, "summary_key")
    store = DocumentStore.from_sample()

    def key(user: int, document: int, template: str = "brief-zh") -> Any:
        return summary_key(store, user, document, template)

    li_lei = key(11, 42)
    facts = {
        "key": li_lei,
        "dimensions": _parsed(li_lei),
        "members_share": key(12, 42) == li_lei,
        "admin_apart": key(10, 42) != li_lei,
        "template_apart": key(11, 42, "brief-en") != li_lei,
        "other_tenant": outcome(lambda: key(20, 42)),
        "admins_only": outcome(lambda: key(11, 43)),
    }
    store.publish(42, "第四版正文")
    facts["new_version"] = key(11, 42)
    store.delete(44)
    facts["deleted"] = outcome(lambda: key(11, 44))
    return facts


async def probe_read(read_summary: Callable[..., Any]) -> dict[str, Any]:
    """Step 2: `await read_summary(cache, store, user_id, document_id, template, load)`.

    `load(document_id, version, template)` is an async "model" that records its calls.
    Five members read document 42 at once (the first load waits until all five are in);
    then an admin; a member reads an admins-only document; document 42 becomes admins-only
    while a member's summary is cached; it gets a new version; a load of 44 fails once.
    """
    check_callable(read_summary, "read_summary")
    store = DocumentStore.from_sample()
    cache = LoadingCache(max_entries=100, max_pending=20, max_ttl=3600.0)
    calls: list[tuple[int, int, str]] = []
    release = asyncio.Event()
    failures = {44: 1}

    async def load(document_id: int, version: int, template: str) -> str:
        calls.append((document_id, version, template))
        await release.wait()
        if failures.get(document_id, 0) > 0:
            failures[document_id] -= 1
            raise RuntimeError("model unavailable")
        return f"summary of {document_id} v{version} ({template})"

    async def read(user: int, document: int, template: str = "brief-zh") -> Any:
        try:
            return await read_summary(cache, store, user, document, template, load)
        except Exception as exc:
            return type(exc).__name__

    readers = [asyncio.ensure_future(read(user, 42)) for user in (11, 12, 11, 12, 11)]
    for _ in range(100):  # no I/O on this path: a hundred turns let every reader arrive
        await asyncio.sleep(0)
    release.set()
    together = await asyncio.gather(*readers)
    facts: dict[str, Any] = {"together": together, "loads_together": len(calls)}
    before = len(calls)
    facts["admin"] = await read(10, 42)
    facts["admin_loaded"] = len(calls) - before
    before = len(calls)
    facts["member_again"] = await read(11, 42)
    facts["member_again_loaded"] = len(calls) - before
    before = len(calls)
    facts["admins_only"] = await read(11, 43)
    facts["admins_only_loaded"] = len(calls) - before
    store.set_visibility(42, "admins")
    facts["after_revocation"] = await read(11, 42)
    store.set_visibility(42, "team")
    store.publish(42, "第四版正文")
    facts["new_version"] = await read(11, 42)
    facts["new_version_load"] = calls[-1] if calls else None
    facts["failed_then_retried"] = [await read(11, 44), await read(11, 44)]
    facts["loads_of_44"] = sum(1 for call in calls if call[0] == 44)
    return facts


def _job_total(conn: psycopg.Connection) -> int:
    return conn.execute(query("job_total").sql).fetchone()[0]


def probe_submit(conn: psycopg.Connection, submit_summary: Callable[..., int]) -> dict[str, Any]:
    """Step 3: `submit_summary(conn, store, user_id, document_id, template)` -> job id.

    Runs inside a transaction that is rolled back: repeats by the same user, a colleague
    and an admin, another template, another tenant, a refused user, and a new version.
    """
    check_instance(conn, "conn", psycopg.Connection)
    check_callable(submit_summary, "submit_summary")
    store = DocumentStore.from_sample()
    with conn.transaction(force_rollback=True):
        def submit(user: int, document: int, template: str = "brief-zh") -> Any:
            return outcome(lambda: submit_summary(conn, store, user, document, template))

        first = submit(11, 42)
        facts: dict[str, Any] = {
            "first": first, "again": submit(11, 42), "colleague": submit(12, 42),
            "admin": submit(10, 42), "english": submit(11, 42, "brief-en"),
            "other_tenant": submit(20, 50),
        }
        total = _job_total(conn)
        facts["refused"] = submit(11, 43)
        facts["refused_wrote"] = _job_total(conn) - total
        store.publish(42, "第四版正文")
        facts["new_version"] = submit(11, 42)
        facts["row"] = conn.execute(query("job_row").sql, {"job_id": first}).fetchone() \
            if isinstance(first, int) else None
        other = facts["other_tenant"]
        facts["other_row"] = conn.execute(query("job_row").sql, {"job_id": other}).fetchone() \
            if isinstance(other, int) else None
    return facts


def probe_publish(conn: psycopg.Connection, publish_summary: Callable[..., Any]) -> dict[str, Any]:
    """Step 4: `publish_summary(conn, business_key, job_id, summary)` -> the stored summary.

    Inside a rolled-back transaction that starts with no summary for its two keys
    (rows a try-out stored under them are out of sight until the rollback): a first run, a second run of the same job with a
    different text (a retry; the model is not deterministic), and another version's key.
    """
    check_instance(conn, "conn", psycopg.Connection)
    check_callable(publish_summary, "publish_summary")
    v3, v4 = "summary:1:42:v3:brief-zh", "summary:1:42:v4:brief-zh"
    with conn.transaction(force_rollback=True):
        conn.execute(query("forget").sql, {"keys": [v3, v4]})  # whatever a try-out stored
        facts = {
            "first": publish_summary(conn, v3, 1, "第一次运行的摘要"),
            "second": publish_summary(conn, v3, 1, "重试时的摘要"),
            "other": publish_summary(conn, v4, 2, "第四版的摘要"),
            "rows": [row for row in conn.execute(query("published").sql).fetchall()
                     if row[0] in (v3, v4)],
        }
    return facts


def probe_retry(conn: psycopg.Connection, fail_summary: Callable[..., Any]) -> dict[str, Any]:
    """Step 6: `fail_summary(conn, claim, error, rng)` -> the job's new state.

    Inside a rolled-back transaction, on a frozen database clock: one job fails with
    TimeoutError on every attempt (the clock jumps to each retry's run_after), with
    `MaxJitter` as rng so each delay is the policy's ceiling; two more jobs fail once with
    PermanentError and LookupError. `transient` lists (attempt, state, delay seconds).
    """
    check_instance(conn, "conn", psycopg.Connection)
    check_callable(fail_summary, "fail_summary")
    facts: dict[str, Any] = {"transient": [], "permanent": []}
    with conn.transaction(force_rollback=True):
        now = _AT
        db.set_clock(conn, now)
        try:
            job = jobs.submit(conn, tenant_id=1, kind="probe", payload={}, max_attempts=20)
            for _ in range(20):
                claim = jobs.claim(conn, lease=30, kinds=["probe"], worker="probe")
                if claim is None:
                    break
                state = fail_summary(conn, claim, TimeoutError("model timed out"), MaxJitter())
                row = jobs.status(conn, tenant_id=1, job_id=job)
                delay = (row.run_after - now).total_seconds() if row.state == "pending" else None
                facts["transient"].append((claim.attempt, state, delay))
                if row.state != "pending":
                    break
                now = row.run_after
                db.set_clock(conn, now)
            for error in (PermanentError("unsupported template"), LookupError("no version 9")):
                other = jobs.submit(conn, tenant_id=1, kind="probe", payload={}, max_attempts=20)
                claim = jobs.claim(conn, lease=30, kinds=["probe"], worker="probe")
                fail_summary(conn, claim, error, MaxJitter())
                row = jobs.status(conn, tenant_id=1, job_id=other)
                facts["permanent"].append((type(error).__name__, row.state, row.attempts))
        finally:
            db.set_clock(conn, None)
    return facts


def _pairs(frame: Any) -> list[tuple[int, str, int]]:
    """(tenant_id, state, jobs) rows, sorted: the order of the rows is not what is checked."""
    return sorted((int(t), str(s), int(n)) for t, s, n in frame[["tenant_id", "state", "jobs"]]
                  .itertuples(index=False))


def probe_metrics(conn: psycopg.Connection, job_counts: Callable[..., Any]) -> dict[str, Any]:
    """Step 7: `job_counts(conn)` -> a DataFrame with columns tenant_id, state, jobs.

    Compared with the reference query `job_counts` on the chapter's jobs, then again inside
    a rolled-back transaction after adding two pending jobs of tenant 2 and a cancelled one.
    """
    check_instance(conn, "conn", psycopg.Connection)
    check_callable(job_counts, "job_counts")
    reference = query("job_counts").sql
    frame = job_counts(conn)
    facts: dict[str, Any] = {"columns": [str(c) for c in getattr(frame, "columns", [])]}
    if facts["columns"][:3] != ["tenant_id", "state", "jobs"]:
        return facts
    facts["got"] = _pairs(frame)
    facts["expected"] = sorted(tuple(row) for row in conn.execute(reference).fetchall())
    with conn.transaction(force_rollback=True):
        for _ in range(2):
            jobs.submit(conn, tenant_id=2, kind="noop", payload={})
        cancelled = jobs.submit(conn, tenant_id=2, kind="noop", payload={})
        jobs.cancel(conn, tenant_id=2, job_id=cancelled, actor="probe", reason="metrics probe")
        facts["got_after"] = _pairs(job_counts(conn))
        facts["expected_after"] = sorted(tuple(row) for row in conn.execute(reference).fetchall())
    return facts
