"""The course's HTTP app: the generic job service plus the sample app's users, documents and page.

    cachequeue serve --schema serve --app cachequeue.course.webapp:create_app

`cachequeue.service` knows tokens, tenants and jobs only. This module plugs the sample
"team documents assistant" into its seams:

- `authenticator()`: the sample users' tokens (the `api_token` column of users.csv) as a
  `service.TokenTable`, each token mapped to its user and tenant;
- `documents_router(store)`: `GET /v1/documents` (what the caller may read) and
  `POST /v1/documents/{id}/summaries` (202, through `summaries.request_summary`), plus
  `GET /demo/users`, the sample users and their published tokens for the page's picker;
- `can_read(store)`: a summary job is visible only to users who may read its document,
  so a member never reads an admins-only document's summary through `/v1/jobs/{id}`;
- the page in `web/` (plain HTML, CSS and JavaScript, no build step), served at `/`.

`create_app(schema)` also prepares the schema when it has no queue yet (the course's
tables and sample rows, and the `pause` kind), so `make serve` works on a fresh database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict

from .. import db, service, sqlfile
from ..service.auth import Caller, Principal, TokenTable
from ..service.problems import Problem
from ..service.responses import accepted
from ..service.runtime import ServiceDep
from . import data, summaries
from .access import PermissionDenied
from .documents import DocumentStore

__all__ = ["PAGE_DIR", "SummaryRequest", "authenticator", "bearer", "can_read", "create_app",
           "documents_router", "prepare", "readable_documents", "sample_users"]

PAGE_DIR = Path(__file__).resolve().parent / "web"
DocumentId = Annotated[int, PathParam(ge=1, le=2**31 - 1)]
_QUERIES = sqlfile.load(__package__, "webapp.sql")


def sample_users() -> list[dict[str, Any]]:
    """The sample users with their tenant and published demonstration token."""
    tenants = {r["id"]: r["name"] for r in data.rows("tenants")}
    return [{"id": int(r["id"]), "name": r["name"], "role": r["role"],
             "tenant_id": int(r["tenant_id"]), "tenant": tenants[r["tenant_id"]],
             "token": r["api_token"]} for r in data.rows("users")]


def bearer(user_id: int) -> dict[str, str]:
    """The Authorization header of sample user `user_id`: `httpx.get(..., headers=bearer(11))`."""
    for user in sample_users():
        if user["id"] == user_id:
            return {"Authorization": f"Bearer {user['token']}"}
    raise LookupError(f"no sample user {user_id!r}")


def authenticator() -> TokenTable:
    """Token -> Principal(tenant, user) for every sample user."""
    return TokenTable({u["token"]: Principal(u["tenant_id"], u["id"], u["name"])
                       for u in sample_users()})


def can_read(store: DocumentStore) -> service.operations.CanRead:
    """The finer access rule for jobs: a summary follows its document's permissions."""
    def check(principal: Principal, kind: str, payload: dict) -> bool:
        if kind != "summarise":
            return True
        try:
            store.authorize(principal.user_id, payload["document_id"])
        except (PermissionDenied, LookupError, KeyError):
            return False
        return True
    return check


def readable_documents(store: DocumentStore, principal: Principal) -> list[dict[str, Any]]:
    """The documents this user may read now, current version first-class."""
    found = []
    for row in data.rows("documents"):
        document = store.document(int(row["id"]))
        try:
            view = store.authorize(principal.user_id, document.id)
        except PermissionDenied:
            continue
        found.append({"id": document.id, "title": document.title, "version": document.version,
                      "visibility": document.visibility, "view": view})
    return found


def _summary_or_problem(conn, store: DocumentStore, principal: Principal, document_id: int,
                        template: str) -> tuple[int, str]:
    """summaries.request_summary, its refusals as HTTP answers. Another tenant's document
    and a deleted one are "not found" (no existence leak); an admins-only document of the
    user's own tenant is "forbidden"."""
    try:
        return summaries.request_summary(conn, store, store.user(principal.user_id),
                                         document_id, template)
    except LookupError:
        raise Problem(404, "not_found", f"no document {document_id}") from None
    except PermissionDenied as exc:
        if exc.reason == "it is visible to admins only":
            raise Problem(403, "forbidden", f"document {document_id} is visible to admins only") from None
        raise Problem(404, "not_found", f"no document {document_id}") from None
    except ValueError as exc:
        raise Problem(422, "invalid_request", str(exc)) from None


class SummaryRequest(BaseModel):
    """The body of POST /v1/documents/{id}/summaries (optional)."""

    model_config = ConfigDict(extra="forbid")
    template: str = "brief-zh"


def documents_router(store: DocumentStore) -> APIRouter:
    """The sample app's routes over `store`."""
    router = APIRouter(tags=["documents"])

    @router.get("/v1/documents")
    async def documents(principal: Caller) -> list[dict[str, Any]]:
        return readable_documents(store, principal)

    @router.post("/v1/documents/{document_id}/summaries", status_code=202)
    async def request_summary(document_id: DocumentId, principal: Caller, svc: ServiceDep,
                              body: SummaryRequest | None = None):
        template = (body or SummaryRequest()).template
        job_id, state = await svc.call(_summary_or_problem, store, principal, document_id,
                                       template)
        return accepted(job_id, state=state, retry_after=svc.retry_after)

    @router.get("/demo/users")
    async def demo_users() -> list[dict[str, Any]]:
        return sample_users()

    return router


def prepare(schema: str, *, url: str | None = None) -> None:
    """Give `schema` the course's tables and sample rows if it has no queue yet, and the
    kinds of `summaries.HANDLERS`. An existing queue is left as it is."""
    with db.connect(schema, url=url) as conn:
        if not conn.execute(_QUERIES["has_queue"].sql).fetchone()[0]:
            db.reset_schema(conn, schema)
            data.load_sample(conn)
        summaries.install(conn)


def create_app(schema: str, *, url: str | None = None, **settings: Any) -> FastAPI:
    """The course's app on `schema` (see the module docstring)."""
    prepare(schema, url=url)
    store = DocumentStore.from_sample()
    return service.create_app(schema, authenticator(), url=url,
                              routers=[documents_router(store)], can_read=can_read(store),
                              static_dir=PAGE_DIR, title="team documents assistant",
                              **settings)
