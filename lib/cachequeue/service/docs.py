"""What the OpenAPI document says about bodies and errors (`/openapi.json`).

FastAPI documents what a route declares; the service's routes read their bodies themselves
(after authentication, under a cap: see `requests`), so the request bodies are declared
here (`JOB_REQUEST`), and so is the shape of every error answer (`PROBLEM`,
application/problem+json), listed per route with `problems(401, 404, ...)`. The kinds a job
may name are rows of the queue's `job_kinds`, so `/openapi.json` is served by a route of the
app that reads them (or takes the workers' kinds, when the service knows them) and lists
them as the enum of `kind` (`with_kinds`). A client
generator, or schemathesis in the test suite, then knows every answer a route may give.
"""

from __future__ import annotations

import copy
from typing import Any

from ..queue.limits import MAX_RUN_AFTER
from .problems import MEDIA_TYPE
from .requests import MAX_ATTEMPTS, MAX_KIND_CHARS

__all__ = ["JOB_REQUEST", "PROBLEM", "json_body", "problems", "with_kinds"]

PROBLEM: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status", "code", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "code": {"type": "string", "description": "stable, for programs"},
        "detail": {"type": "string", "description": "for people"},
    },
}

_WHY = {
    400: "Malformed: not JSON, or a header that is not what it must be",
    401: "No valid bearer token",
    403: "Not allowed for this user",
    404: "Not found (also another tenant's job)",
    405: "Method not allowed",
    413: "Body too large",
    415: "Body not sent as application/json",
    409: "The job is final already: nothing to cancel",
    422: "Well-formed, but not a valid request",
    429: "A per-tenant limit: submit rate, pending jobs or open streams (Retry-After)",
    503: "Overloaded, or the database cannot be reached; see Retry-After",
}

JOB_REQUEST: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "kind": {"type": "string", "minLength": 1, "maxLength": MAX_KIND_CHARS,
                 "description": "a kind of the queue's job_kinds"},
        "payload": {"type": "object", "description": "a JSON object, at most 64 KiB"},
        "max_attempts": {"type": "integer", "minimum": 1, "maximum": MAX_ATTEMPTS,
                         "default": 3},
        "run_after": {"oneOf": [
            {"type": "number", "minimum": 0, "maximum": MAX_RUN_AFTER,
             "description": "seconds from now"},
            {"type": "string", "format": "date-time",
             "description": "an ISO 8601 time with a zone, at most 365 days ahead; a past "
                            "time means now"}]},
    },
}


def with_kinds(document: dict[str, Any], kinds: list[str]) -> dict[str, Any]:
    """`document` (the app's OpenAPI document, left as it is) with `kinds` as the enum of a
    job's `kind` in the body of POST /v1/jobs: the kinds a submit can name right now."""
    found = copy.deepcopy(document)
    body = found.get("paths", {}).get("/v1/jobs", {}).get("post", {}).get("requestBody")
    if body is not None and kinds:
        kind = body["content"]["application/json"]["schema"]["properties"]["kind"]
        kind["enum"] = list(kinds)
    return found


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` entries of these error statuses, each an application/problem+json."""
    return {status: {"description": _WHY[status],
                     "content": {MEDIA_TYPE: {"schema": PROBLEM}}} for status in statuses}


def json_body(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """The `openapi_extra=` of a route that reads a JSON body itself."""
    return {"requestBody": {"required": required,
                            "content": {"application/json": {"schema": schema}}}}
