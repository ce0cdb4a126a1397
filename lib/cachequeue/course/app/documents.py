"""A tiny in-memory document store with versions, deletion and role changes.

It stands in for the database of the cache chapters: reads return immutable snapshots
(`access.User`, `access.Document`), and every write replaces a row, so a request that
read a snapshot keeps seeing exactly what it read while the store moves on. That is the
situation of a web request that read a row and is still working when another request
writes. Bodies of old versions stay readable, as in `document_versions`.
"""

from __future__ import annotations

from dataclasses import replace

from ...checks import check_choice, check_text
from . import data
from .access import ROLES, VISIBILITIES, Document, User, authorize

__all__ = ["DocumentStore"]


class DocumentStore:
    """Users, documents and their version bodies; `from_sample()` loads data/*.csv."""

    def __init__(
        self,
        users: list[User],
        documents: list[Document],
        bodies: dict[tuple[int, int], str],
    ) -> None:
        self._users = {u.id: u for u in users}
        self._documents = {d.id: d for d in documents}
        self._bodies = dict(bodies)
        for doc in documents:
            if (doc.id, doc.version) not in self._bodies:
                raise ValueError(f"document {doc.id} has no body for its version {doc.version}")

    @classmethod
    def from_sample(cls) -> DocumentStore:
        """The course's sample data set (two tenants, five users, five documents)."""
        users = [
            User(int(r["id"]), int(r["tenant_id"]), r["name"], r["role"])
            for r in data.rows("users")
        ]
        documents = [
            Document(int(r["id"]), int(r["tenant_id"]), r["title"], r["visibility"],
                     int(r["version"]))
            for r in data.rows("documents")
        ]
        bodies = {
            (int(r["document_id"]), int(r["version"])): r["body"]
            for r in data.rows("document_versions")
        }
        return cls(users, documents, bodies)

    # ------------------------------------------------------------------ reads

    def user(self, user_id: int) -> User:
        try:
            return self._users[user_id]
        except KeyError:
            raise LookupError(f"no user {user_id!r}") from None

    def document(self, document_id: int) -> Document:
        """The current row as a snapshot (deleted documents included, marked deleted)."""
        try:
            return self._documents[document_id]
        except KeyError:
            raise LookupError(f"no document {document_id!r}") from None

    def body(self, document_id: int, version: int) -> str:
        """The text of one version (old versions stay readable)."""
        try:
            return self._bodies[(document_id, version)]
        except KeyError:
            raise LookupError(f"no version {version!r} of document {document_id!r}") from None

    def authorize(self, user_id: int, document_id: int) -> str:
        """`access.authorize` on the current rows: the view, or PermissionDenied."""
        return authorize(self.user(user_id), self.document(document_id))

    # ------------------------------------------------------------------ writes

    def _changed(self, doc: Document, **changes) -> Document:
        """Store and return a copy of `doc` with `changes` (rows are immutable snapshots)."""
        new = replace(doc, **changes)
        self._documents[new.id] = new
        return new

    def publish(self, document_id: int, body: str) -> Document:
        """Store `body` as the next version and return the new current row."""
        doc = self.document(document_id)
        if doc.deleted:
            raise ValueError(f"document {document_id} is deleted; a new version is not accepted")
        check_text(body, "body", limit=1_000_000)
        new = self._changed(doc, version=doc.version + 1)
        self._bodies[(new.id, new.version)] = body
        return new

    def delete(self, document_id: int) -> Document:
        """Mark the document deleted (its id and versions stay, as a tombstone)."""
        doc = self.document(document_id)
        if doc.deleted:
            raise ValueError(f"document {document_id} is already deleted")
        return self._changed(doc, deleted=True)

    def set_visibility(self, document_id: int, visibility: str) -> Document:
        """Change who may read a document; the content and its version stay the same."""
        doc = self.document(document_id)
        check_choice(visibility, "visibility", VISIBILITIES)
        return self._changed(doc, visibility=visibility)

    def set_role(self, user_id: int, role: str) -> User:
        """Change a user's role, e.g. revoke admin rights by making them a member."""
        user = self.user(user_id)
        check_choice(role, "role", ROLES)
        new = replace(user, role=role)
        self._users[new.id] = new
        return new
