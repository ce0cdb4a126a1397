"""Who may read a document, and under which permission view its results are cached.

A *view* is derived from the user's role ("admin" or "member"), never the user id: every
member shares one cached result, and an admin's result never sits under a member's key.
`authorize(user, document)` returns that view, or raises `PermissionDenied`:

* a user reads only documents of their own tenant;
* a document with visibility "admins" is readable by admins only ("team": everyone);
* a deleted document is readable by nobody.

The rule is checked on every read, before the cache is consulted: a cached result was
computed for whoever loaded it first, so checking only when loading lets a later reader
skip the check entirely. Keying by view as well keeps one role's result away from another
role even on a path that forgot the check.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...checks import check_bool, check_choice, check_instance, check_int
from ...errors import CacheQueueError

__all__ = ["ROLES", "VISIBILITIES", "Document", "PermissionDenied", "User", "authorize", "view_of"]

ROLES = ("admin", "member")
VISIBILITIES = ("team", "admins")


class PermissionDenied(CacheQueueError):
    """This user may not read this document (other tenant, admins only, or deleted).

    `reason` says which. An HTTP layer should answer "not found" for another tenant's
    document, so that ids of other tenants do not leak through the status code.
    """

    def __init__(self, user_id: int, document_id: int, reason: str) -> None:
        super().__init__(f"user {user_id} may not read document {document_id}: {reason}")
        self.user_id = user_id
        self.document_id = document_id
        self.reason = reason


@dataclass(frozen=True, slots=True)
class User:
    """One row of users.csv: who is asking, in which tenant, with which role."""

    id: int
    tenant_id: int
    name: str
    role: str

    def __post_init__(self) -> None:
        check_int(self.id, "id")
        check_int(self.tenant_id, "tenant_id")
        check_choice(self.role, "role", ROLES)


@dataclass(frozen=True, slots=True)
class Document:
    """One row of documents.csv as a snapshot: the current version when it was read."""

    id: int
    tenant_id: int
    title: str
    visibility: str
    version: int
    deleted: bool = False

    def __post_init__(self) -> None:
        check_int(self.id, "id")
        check_int(self.tenant_id, "tenant_id")
        check_int(self.version, "version", minimum=1)
        check_choice(self.visibility, "visibility", VISIBILITIES)
        check_bool(self.deleted, "deleted")


def view_of(user: User) -> str:
    """The permission view a user's results are cached under: their role, not their id."""
    return check_instance(user, "user", User).role


def authorize(user: User, document: Document) -> str:
    """The view under which `user` may read `document`; raises PermissionDenied otherwise."""
    view = view_of(user)
    check_instance(document, "document", Document)
    if user.tenant_id != document.tenant_id:
        raise PermissionDenied(user.id, document.id, "it belongs to another tenant")
    if document.deleted:
        raise PermissionDenied(user.id, document.id, "it is deleted")
    if document.visibility == "admins" and user.role != "admin":
        raise PermissionDenied(user.id, document.id, "it is visible to admins only")
    return view
