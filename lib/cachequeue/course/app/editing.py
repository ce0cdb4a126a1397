"""Editing a document with its event in one transaction, and the summary that is current.

`new_version(conn, tenant_id, document_id, body)` writes the new version and an outbox event
`document.version_created` in ONE transaction (`queue.outbox.add`): both commit or neither.

A summary job carries the version it summarises (`{"document_id", "version"}`). When the
document moves on while the job runs, its result is still stored (the job did finish), but
it is not the current summary: `current_summary` reads only a result for the document's
current version, where `latest_summary` (the naive read) returns whatever finished last.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ... import sqlfile
from ...checks import check_int, check_text
from ...queue import outbox

__all__ = ["current_summary", "delete_document", "latest_summary", "new_version", "version"]

_QUERIES = sqlfile.load(__package__, "editing.sql")


def new_version(conn: psycopg.Connection, tenant_id: int, document_id: int, body: str) -> int:
    """Write version n + 1 of the document and its outbox event together; returns n + 1.
    Needs `outbox.install(conn)`. LookupError for a missing, deleted or other tenant's document."""
    params = {"tenant_id": check_int(tenant_id, "tenant_id"),
              "document_id": check_int(document_id, "document_id"), "body": check_text(body, "body")}
    with conn.transaction():
        row = conn.execute(_QUERIES["bump_version"].sql, params).fetchone()
        if row is None:
            raise LookupError(f"tenant {tenant_id} has no document {document_id}")
        outbox.add(conn, "document.version_created",
                   {"tenant_id": tenant_id, "document_id": document_id, "version": row[0]})
    return row[0]


def _summary(conn: psycopg.Connection, name: str, tenant_id: int,
             document_id: int) -> dict[str, Any] | None:
    row = conn.execute(_QUERIES[name].sql, {"tenant_id": check_int(tenant_id, "tenant_id"),
                                            "document_id": check_int(document_id, "document_id")}
                       ).fetchone()
    return None if row is None else {"version": row[0], "output": row[1]}


def latest_summary(conn: psycopg.Connection, tenant_id: int, document_id: int) -> dict | None:
    """The naive read: {"version", "output"} of the summary that finished last, or None."""
    return _summary(conn, "latest_summary", tenant_id, document_id)


def current_summary(conn: psycopg.Connection, tenant_id: int, document_id: int) -> dict | None:
    """{"version", "output"} of the summary of the current version, or None (not done yet)."""
    return _summary(conn, "current_summary", tenant_id, document_id)


def delete_document(conn: psycopg.Connection, tenant_id: int, document_id: int) -> bool:
    """Soft-delete the document (deleted_at); True if it was there. Its summaries, even one
    that finishes later, are never current again."""
    params = {"tenant_id": check_int(tenant_id, "tenant_id"),
              "document_id": check_int(document_id, "document_id")}
    return conn.execute(_QUERIES["delete_document"].sql, params).fetchone() is not None


def version(conn: psycopg.Connection, tenant_id: int, document_id: int) -> int | None:
    """The document's current version, or None for a missing or other tenant's document."""
    row = conn.execute(_QUERIES["version"].sql, {"tenant_id": check_int(tenant_id, "tenant_id"),
                                                 "document_id": check_int(document_id,
                                                                          "document_id")}
                       ).fetchone()
    return None if row is None else row[0]
