"""The sample app's summary jobs: how a request becomes a job, and what a worker does with it.

`request_summary` is the business side of `POST /v1/documents/{id}/summaries`: the user
must be allowed to read the document (checked on the current row, as chapter 02 taught),
and the job's idempotency key is the result's business key, tenant + document + version +
template. A second request for the same summary, by the same user or a colleague, a retry
after a timeout or a double click, gets the first job back: one job per result, however
often it is asked for. A new version of the document is a new key, hence a new job. The
answer says which happened (`Requested.created`), so the page can tell a user that the
summary they asked for was already on its way, instead of silently showing an older job.

`SUMMARY_HANDLERS` is what `cachequeue worker --handlers cachequeue.course.app.summaries:SUMMARY_HANDLERS`
runs: `summarise` (the slow, deterministic summariser over the sample documents; it takes
SUMMARY_SECONDS and stops early when told to; it summarises only a document of the job's
own tenant, read from the claim, never from the payload: a payload naming another
tenant's document, however it got into the queue, is a permanent failure that stores
nothing of that document), `noop`, and `pause` (waits
`payload["seconds"]`: the benchmark's long jobs). `install(conn)` adds the `pause` kind.

The templates: `brief-zh` is the model's Chinese summary (its first clause, then its
length); `brief-en` is written in English only (`english_brief`). The sample model
summarises by quoting, and every sample document is Chinese, so its own English line
quotes Chinese; the model translates nothing, so the English brief quotes nothing and says
in English what can be counted: the points and the characters.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, NamedTuple

import psycopg

from ... import sqlfile
from ...checks import check_choice, check_int, check_seconds, check_text
from ...queue import PermanentError, jobs
from ...queue.context import JobContext
from .access import User
from .documents import DocumentStore
from .summariser import Summariser

__all__ = ["SUMMARY_HANDLERS", "SUMMARY_SECONDS", "TEMPLATES", "Requested", "business_key",
           "english_brief", "install", "noop", "pause", "request_summary", "summarise"]

# template -> language of the summariser
TEMPLATES = {"brief-zh": "zh", "brief-en": "en"}
SUMMARY_SECONDS = 1.0  # how long the "model" takes: long enough to watch, short for tests
_QUERIES = sqlfile.load(__package__, "webapp.sql")
_POINT_ENDS = re.compile("[。；！？]")


class Requested(NamedTuple):
    """What a summary request got: the job, its state now, and whether this request
    created it (False: the job of an earlier request for the same result)."""

    job_id: int
    state: str
    created: bool


def install(conn: psycopg.Connection) -> None:
    """Add the kinds of SUMMARY_HANDLERS that queue.sql does not have (`pause`); idempotent."""
    conn.execute(_QUERIES["install"].sql)


def business_key(tenant_id: int, document_id: int, version: int, template: str) -> str:
    """The identity of one summary: e.g. 'summary:1:42:v3:brief-zh'."""
    return (f"summary:{check_int(tenant_id, 'tenant_id')}:{check_int(document_id, 'document_id')}"
            f":v{check_int(version, 'version', minimum=1)}:{check_choice(template, 'template', TEMPLATES)}")


def request_summary(conn: psycopg.Connection, store: DocumentStore, user: User,
                    document_id: int, template: str = "brief-zh") -> Requested:
    """Submit (or find) the job that summarises the document's current version: its id,
    its state, and whether this request created it. Raises LookupError (no such
    document), access.PermissionDenied (the user may not read it) or ValueError (unknown
    template), before anything is written. Commits its own transaction, so `conn` must not
    be inside one (ValueError)."""
    check_choice(template, "template", TEMPLATES)
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("request_summary commits its own transaction: call it outside one")
    document = store.document(document_id)
    store.authorize(user.id, document.id)
    # One transaction, so that "did this request insert the row?" has an exact answer:
    # the row's xmin is this transaction's id only if this transaction wrote it.
    with conn.transaction():
        job_id = jobs.submit(conn, tenant_id=user.tenant_id, kind="summarise",
                             payload={"document_id": document.id, "version": document.version,
                                      "template": template},
                             idempotency_key=business_key(user.tenant_id, document.id,
                                                          document.version, template))
        state, created = conn.execute(_QUERIES["requested"].sql, {
            "job_id": job_id, "tenant_id": user.tenant_id}).fetchone()
    return Requested(job_id, state, created)


def english_brief(text: str) -> str:
    """The `brief-en` summary, in English only: how long the text is and how many points
    (clauses ending in 。；！？) it makes, e.g. 'Summary: a Chinese document of 35
    characters in 3 points (the sample model does not translate).'"""
    check_text(text, "text", limit=1_000_000)
    points = sum(1 for part in _POINT_ENDS.split(text) if part.strip())
    return (f"Summary: a Chinese document of {len(text)} characters in {points} "
            f"point{'' if points == 1 else 's'} (the sample model does not translate).")


@cache
def _store() -> DocumentStore:
    return DocumentStore.from_sample()


def summarise(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any] | None:
    """The `summarise` handler: the summary of one version, after SUMMARY_SECONDS."""
    document_id, version = payload.get("document_id"), payload.get("version")
    try:
        document = _store().document(document_id)
        if document.tenant_id != ctx.claim.tenant_id:  # the job's tenant, not the payload's
            raise LookupError(document_id)
        text = _store().body(document_id, version)
        language = TEMPLATES[payload.get("template")]
    except (LookupError, TypeError):
        # The same words whoever owns the document: the error is the job's tenant's to read.
        raise PermanentError(f"no document {document_id!r} with version {version!r} "
                             "in this tenant, or no such template") from None
    model = Summariser(delay=SUMMARY_SECONDS, sleep=ctx.wait)  # wakes early to stop
    summary = model.summarise(text, language)  # the model call, SUMMARY_SECONDS long
    if language == "en":  # its English line quotes the Chinese text: see the docstring
        summary = english_brief(text)
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


SUMMARY_HANDLERS = {"summarise": summarise, "noop": noop, "pause": pause}
