"""The sample app's summary jobs: how a request becomes a job, and what a worker does with it.

`request_summary` is the business side of `POST /v1/documents/{id}/summaries`: the user
must be allowed to read the document (checked on the current row, as chapter 02 taught),
and the job's idempotency key is the business identity of the result, tenant + document +
version + template. A second request for the same summary, by the same user or a
colleague, a retry after a timeout or a double click, gets the first job back: one job per
result, however often it is asked for. A new version of the document is a new key, hence
a new job.

`HANDLERS` is what `cachequeue worker --handlers cachequeue.course.summaries:HANDLERS`
runs: `summarise` (the slow, deterministic summariser over the sample documents; it takes
SUMMARY_SECONDS and stops early when told to), `noop`, and `pause` (waits
`payload["seconds"]`: the benchmark's long jobs). `install(conn)` adds the `pause` kind.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import psycopg

from .. import sqlfile
from ..checks import check_choice, check_int, check_seconds
from ..queue import jobs
from ..queue.context import JobContext
from .access import User
from .documents import DocumentStore
from .summariser import Summariser

__all__ = ["HANDLERS", "SUMMARY_SECONDS", "TEMPLATES", "business_key", "install", "noop",
           "pause", "request_summary", "summarise"]

# template -> language of the summariser
TEMPLATES = {"brief-zh": "zh", "brief-en": "en"}
SUMMARY_SECONDS = 1.0  # how long the "model" takes: long enough to watch, short for tests
_QUERIES = sqlfile.load(__package__, "webapp.sql")


def install(conn: psycopg.Connection) -> None:
    """Add the kinds of HANDLERS that queue.sql does not have (`pause`); idempotent."""
    conn.execute(_QUERIES["install"].sql)


def business_key(tenant_id: int, document_id: int, version: int, template: str) -> str:
    """The identity of one summary: e.g. 'summary:1:42:v3:brief-zh'."""
    return (f"summary:{check_int(tenant_id, 'tenant_id')}:{check_int(document_id, 'document_id')}"
            f":v{check_int(version, 'version', minimum=1)}:{check_choice(template, 'template', TEMPLATES)}")


def request_summary(conn: psycopg.Connection, store: DocumentStore, user: User,
                    document_id: int, template: str = "brief-zh") -> tuple[int, str]:
    """Submit (or find) the job that summarises the document's current version; return its
    id and state. Raises LookupError (no such document), access.PermissionDenied (the user
    may not read it) or ValueError (unknown template), before anything is written."""
    check_choice(template, "template", TEMPLATES)
    document = store.document(document_id)
    store.authorize(user.id, document.id)
    job_id = jobs.submit(conn, tenant_id=user.tenant_id, kind="summarise",
                         payload={"document_id": document.id, "version": document.version,
                                  "template": template},
                         idempotency_key=business_key(user.tenant_id, document.id,
                                                      document.version, template))
    status = jobs.status(conn, tenant_id=user.tenant_id, job_id=job_id)
    return job_id, status.state


@cache
def _store() -> DocumentStore:
    return DocumentStore.from_sample()


def summarise(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any] | None:
    """The `summarise` handler: the summary of one version, after SUMMARY_SECONDS."""
    document_id, version = payload["document_id"], payload["version"]
    text = _store().body(document_id, version)
    model = Summariser(delay=SUMMARY_SECONDS, sleep=ctx.wait)  # wakes early to stop
    summary = model.summarise(text, TEMPLATES[payload["template"]])
    if ctx.should_stop():
        return None  # lease lost or handed back: whatever we return is refused anyway
    return {"document_id": document_id, "version": version, "template": payload["template"],
            "summary": summary}


def noop(payload: dict[str, Any]) -> dict[str, Any]:
    """The `noop` handler: nothing."""
    return {}


def pause(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    """The `pause` handler: wait payload["seconds"] (stopping early when told to)."""
    seconds = check_seconds(payload.get("seconds", 0), "seconds", allow_zero=True, upper=3600)
    stopped = ctx.wait(seconds)
    return {"seconds": seconds, "stopped": stopped}


HANDLERS = {"summarise": summarise, "noop": noop, "pause": pause}
