"""Two tenants, one document id: a second tenant's store, and a key that forgets the tenant.

Document ids are often unique only within a tenant: each tenant has its own database or
schema, or documents are numbered per tenant (`/tenants/2/documents/42`). Then tenant 1 and
tenant 2 both have a document 42, at the same version perhaps, and one cache shared by the
service must tell them apart by the tenant alone.

`tenant_two_store()` is such a second store: tenant 2's users from the sample data, and a
document 42 of tenant 2 at version 3 (like tenant 1's document 42) with other text.
`tenantless_key` is the key with every dimension of `reading.versioned_key` except the tenant.
"""

from __future__ import annotations

from . import data
from .access import Document, User
from .documents import DocumentStore

__all__ = ["TENANT_TWO_BODY", "tenant_two_store", "tenantless_key"]

# The text of tenant 2's document 42: nothing in it may reach tenant 1, or the reverse.
TENANT_TWO_BODY = "仲裁条款必须写明仲裁机构与适用规则；与管辖法院条款冲突时，以仲裁条款为准。"


def tenant_two_store() -> DocumentStore:
    """Tenant 2's own store: its users (ids 20, 21) and a document 42, version 3, team-visible."""
    users = [User(int(r["id"]), int(r["tenant_id"]), r["name"], r["role"])
             for r in data.rows("users") if r["tenant_id"] == "2"]
    document = Document(42, 2, "仲裁条款要点", "team", 3)
    return DocumentStore(users, [document], {(42, 3): TENANT_TWO_BODY})


def tenantless_key(document: Document, view: str, language: str) -> str:
    """Document, version, view and language, but no tenant: two tenants' document 42 collide."""
    return f"doc={document.id}|v={document.version}|view={view}|lang={language}"
