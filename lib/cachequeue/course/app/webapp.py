"""The course's HTTP app: the generic job service plus the sample app's users, documents and page.

    cachequeue serve --schema serve --app cachequeue.course.app.webapp:create_app

`cachequeue.service` knows tokens, tenants and jobs only. This module plugs the sample
"team documents assistant" into its seams:

- `authenticator()`: the sample users' tokens (the `api_token` column of users.csv) as a
  `service.TokenTable`, each token mapped to its user and tenant;
- `documents_router(store)`: `GET /v1/documents` (what the caller may read) and
  `POST /v1/documents/{id}/summaries` (202, through `summaries.request_summary`; the
  token is checked before the optional body is read, and the body is capped at
  `service.requests.MAX_SMALL_BODY_BYTES`; a request that found the job of an earlier
  request for the same summary says so with `Idempotent-Replayed: true`, the header
  Stripe's API uses for a replayed idempotent request);
- `demo_router()`: `GET /demo/users`, the sample users and their published tokens for the
  page's picker. Only with `demo=True` (`cachequeue serve --demo`, which `make serve`
  passes): it hands every tenant's token to anyone who asks, which is what a classroom
  demonstration wants and nothing else does;
- `check_submit(store)`: a `summarise` job submitted through `POST /v1/jobs` must name a
  document of the caller's tenant that the caller may read, and a version of it that
  exists: another tenant's document is the same 404 as a missing one, so tenant 2 can
  neither have tenant 1's document summarised nor learn that it exists;
- `can_read(store)`: a summary job is visible only to users who may read its document,
  so a member never reads an admins-only document's summary through `/v1/jobs/{id}`;
- the page in `web/` (plain HTML, CSS and JavaScript, no build step), served at `/`
  (without the demo flag it says how to start the service with it).

`create_app(schema)` also prepares the schema when it has no queue yet (the course's
tables and sample rows, and the `pause` kind), so `make serve` works on a fresh database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Request
from fastapi import Path as PathParam

from ... import db, service, sqlfile
from ...checks import check_bool
from ...service.auth import Caller, Principal, TokenTable
from ...service.docs import json_body, problems
from ...service.problems import Problem
from ...service.requests import (
    ID_PATTERN,
    MAX_SMALL_BODY_BYTES,
    excerpt,
    job_id,
    parse_json,
    read_body,
    require_json,
)
from ...service.responses import accepted
from ...service.runtime import ServiceDep
from .. import chapter
from . import data, summaries
from .access import PermissionDenied
from .documents import DocumentStore

__all__ = ["PAGE_DIR", "SUMMARY_REQUEST", "authenticator", "bearer", "can_read",
           "check_submit", "create_app", "demo_router", "documents_router", "prepare",
           "readable_documents", "sample_users", "summary_template"]

PAGE_DIR = Path(__file__).resolve().parent / "web"
DocumentId = Annotated[str, PathParam(pattern=ID_PATTERN, max_length=10,
                                      description="a document id: decimal digits")]
_QUERIES = sqlfile.load(__package__, "webapp.sql")
# The body of POST /v1/documents/{id}/summaries (optional).
SUMMARY_REQUEST = {"type": "object", "additionalProperties": False,
                   "properties": {"template": {"type": "string",
                                               "enum": sorted(summaries.TEMPLATES),
                                               "default": "brief-zh"}}}


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
        except (PermissionDenied, LookupError, KeyError, TypeError):
            return False
        return True
    return check


def check_submit(store: DocumentStore) -> service.operations.CheckSubmit:
    """The rule for `POST /v1/jobs`: a `summarise` job is the same request as
    `POST /v1/documents/{id}/summaries`, so it gets the same checks and the same answers
    (404 for a document that is missing, deleted or another tenant's, 403 for an
    admins-only one), and its payload must be exactly what a worker can run: the
    document, a version that exists, a template. Other kinds pass."""
    def check(principal: Principal, kind: str, payload: dict) -> None:
        if kind != "summarise":
            return
        fields = {"document_id", "version", "template"}
        if set(payload) != fields:
            raise Problem(422, "invalid_job",
                          f"a summarise payload has exactly the fields {sorted(fields)}")
        document_id, version = payload["document_id"], payload["version"]
        if type(document_id) is not int or type(version) is not int:
            raise Problem(422, "invalid_job", "document_id and version must be integers")
        _authorize(store, principal, document_id)
        try:
            summaries.TEMPLATES[payload["template"]]
            store.body(document_id, version)
        except (KeyError, TypeError):
            raise Problem(422, "invalid_job", f"template must be one of "
                          f"{sorted(summaries.TEMPLATES)}, got {excerpt(payload['template'])}") from None
        except LookupError:
            raise Problem(422, "invalid_job",
                          f"document {document_id} has no version {version}") from None
    return check


def _authorize(store: DocumentStore, principal: Principal, document_id: int) -> None:
    """Return if the user may read the document; the HTTP answer otherwise. Another
    tenant's document and a deleted one are "not found" (no existence leak); an
    admins-only document of the user's own tenant is "forbidden"."""
    try:
        store.authorize(principal.user_id, document_id)
    except LookupError:
        raise Problem(404, "not_found", f"no document {document_id}") from None
    except PermissionDenied as exc:
        if exc.reason == "it is visible to admins only":
            raise Problem(403, "forbidden",
                          f"document {document_id} is visible to admins only") from None
        raise Problem(404, "not_found", f"no document {document_id}") from None


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
                        template: str, limits=None) -> summaries.Requested:
    """summaries.request_summary, its refusals as HTTP answers (see _authorize), after a
    token of the tenant's submit bucket (`limits`: the service's, in the database; a
    statement of its own, since request_summary commits its own transaction)."""
    _authorize(store, principal, document_id)
    if limits is not None:
        limits.admit_submit(conn, principal.tenant_id)  # the tenant's submit rate: 429
    try:
        return summaries.request_summary(conn, store, store.user(principal.user_id),
                                         document_id, template)
    except (LookupError, PermissionDenied):  # changed since _authorize: answered the same
        raise Problem(404, "not_found", f"no document {document_id}") from None
    except ValueError as exc:
        raise Problem(422, "invalid_request", str(exc)) from None


def summary_template(raw: bytes) -> str:
    """The template of a summary request's body (no body: the default); 400 or 422
    otherwise. A body of whitespace only is not JSON: 400, like any other malformed body."""
    if raw == b"":
        return "brief-zh"
    body = parse_json(raw)
    if not isinstance(body, dict) or set(body) - {"template"}:
        raise Problem(422, "invalid_request", 'the body is {"template": ...} or nothing')
    template = body.get("template", "brief-zh")
    # A str first: a dict or list is unhashable, and `in` on a dict would raise (a 500).
    if not isinstance(template, str) or template not in summaries.TEMPLATES:
        raise Problem(422, "invalid_request", f"template must be one of "
                      f"{sorted(summaries.TEMPLATES)}, got {excerpt(template)}")
    return template


def documents_router(store: DocumentStore) -> APIRouter:
    """The sample app's routes over `store`."""
    router = APIRouter(tags=["documents"])

    @router.get("/v1/documents", responses=problems(400, 401))
    async def documents(principal: Caller) -> list[dict[str, Any]]:
        return readable_documents(store, principal)

    @router.post("/v1/documents/{document_id}/summaries", status_code=202,
                 openapi_extra=json_body(SUMMARY_REQUEST, required=False),
                 responses=problems(400, 401, 403, 404, 413, 415, 422, 429, 503))
    async def request_summary(document_id: DocumentId, principal: Caller, svc: ServiceDep,
                              request: Request):
        # The token was checked (Caller) before a byte of the body is read, and the body
        # is read under a cap: a large body without a token costs nothing.
        number = job_id(document_id, "document", 2**31 - 1)
        raw = await read_body(request, MAX_SMALL_BODY_BYTES)
        if raw:
            require_json(request)
        template = summary_template(raw)
        job = await svc.call(_summary_or_problem, store, principal, number, template,
                             svc.limits)
        answer = accepted(job.job_id, state=job.state, retry_after=svc.retry_after)
        if not job.created:  # the job of an earlier request for this summary
            answer.headers["Idempotent-Replayed"] = "true"
        return answer

    return router


def demo_router() -> APIRouter:
    """`GET /demo/users`: the sample users with their tokens (demo mode only)."""
    router = APIRouter(tags=["demo"])

    @router.get("/demo/users")
    async def demo_users() -> list[dict[str, Any]]:
        return sample_users()

    return router


def prepare(schema: str, *, url: str | None = None) -> None:
    """Give `schema` the course's tables and sample rows if it has no queue yet, and the
    kinds of `summaries.SUMMARY_HANDLERS`. An existing queue is left as it is."""
    with db.connect(schema, url=url) as conn:
        if not conn.execute(_QUERIES["has_queue"].sql).fetchone()[0]:
            chapter.reset(conn, schema)
            data.load_sample(conn)
        summaries.install(conn)


def create_app(schema: str, *, url: str | None = None, demo: bool = False,
               **settings: Any) -> FastAPI:
    """The course's app on `schema` (see the module docstring); `demo` adds /demo/users."""
    check_bool(demo, "demo")
    prepare(schema, url=url)
    store = DocumentStore.from_sample()
    routers = [documents_router(store)] + ([demo_router()] if demo else [])
    return service.create_app(schema, authenticator(), url=url, routers=routers,
                              can_read=can_read(store), check_submit=check_submit(store),
                              static_dir=PAGE_DIR, title="team documents assistant",
                              **settings)
