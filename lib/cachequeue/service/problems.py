"""Errors as HTTP answers: one JSON shape (RFC 9457 problem details) for every 4xx and 5xx.

A route or a helper raises `Problem(status, code, detail)`; `install(app)` turns it, and the
errors FastAPI and Starlette raise themselves (unknown path, wrong method, a path parameter
that is not a number) into `application/problem+json`:

    {"type": "about:blank", "title": "Not Found", "status": 404, "code": "not_found",
     "detail": "no job 7"}

`code` is stable and meant for programs; `detail` is for people, and never longer than
MAX_DETAIL_CHARS: an answer does not grow with what the request sent. A database that cannot
be reached is a 503 with Retry-After, never a 500 with a driver's traceback; an error no
handler expected is still a problem (500, code `internal_error`), logged with its type only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from ..errors import DatabaseUnavailable
from ..queue.logline import log_line

__all__ = ["DATABASE_ERRORS", "MAX_DETAIL_CHARS", "MEDIA_TYPE", "Problem", "install",
           "problem_response", "unexpected_response"]

MEDIA_TYPE = "application/problem+json"
MAX_DETAIL_CHARS = 300
# A lost, refused or exhausted connection (psycopg_pool's PoolTimeout is an OperationalError).
DATABASE_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, DatabaseUnavailable)
# RFC 9110's reason phrases, fixed here: Python's HTTPStatus renamed some between versions
# (422 "Unprocessable Entity" became "Unprocessable Content"), and the answers must not.
_TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 413: "Content Too Large",
           415: "Unsupported Media Type", 422: "Unprocessable Content", 429: "Too Many Requests",
           500: "Internal Server Error", 503: "Service Unavailable"}
_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
          405: "method_not_allowed", 413: "content_too_large", 415: "unsupported_media_type",
          422: "invalid_request", 503: "unavailable"}
_LOG = logging.getLogger("cachequeue.service")


class Problem(Exception):
    """An HTTP error answer: `status`, a stable `code`, a `detail` for people, extra headers."""

    def __init__(self, status: int, code: str, detail: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = dict(headers or {})


def problem_response(status: int, code: str, detail: str,
                     headers: Mapping[str, str] | None = None) -> JSONResponse:
    title = _TITLES.get(status) or HTTPStatus(status).phrase
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
    body = {"type": "about:blank", "title": title, "status": status,
            "code": code, "detail": detail}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}),
                        media_type=MEDIA_TYPE)


async def _problem(request: Request, exc: Problem) -> Response:
    return problem_response(exc.status, exc.code, exc.detail, exc.headers)


async def _http(request: Request, exc: HTTPException) -> Response:
    if exc.status_code in (204, 304):  # no body allowed: the one non-error use of the class
        return Response(status_code=exc.status_code, headers=exc.headers)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    return problem_response(exc.status_code, _CODES.get(exc.status_code, "error"), detail,
                            exc.headers)


async def _validation(request: Request, exc: RequestValidationError) -> Response:
    parts = []
    for error in exc.errors():  # names and messages only, never the input (error["input"])
        where = ".".join(str(p)[:40] for p in error.get("loc", ()) if p != "body")
        parts.append(f"{where}: {error.get('msg', 'invalid')}" if where else error.get("msg", ""))
    return problem_response(422, "invalid_request", "; ".join(parts) or "invalid request")


def unexpected_response(path: str, exc: BaseException) -> JSONResponse:
    """The 500 of an error no handler expected, logged with its type only."""
    _LOG.error(log_line("service", "unexpected-error", type=type(exc).__name__,
                        path=path[:100]))
    return problem_response(500, "internal_error", "the service failed to answer; this is a bug")


async def _unexpected(request: Request, exc: Exception) -> Response:
    return unexpected_response(request.url.path, exc)


async def _database(request: Request, exc: Exception) -> Response:
    return problem_response(503, "database_unavailable",
                            "the database cannot be reached right now; try again later",
                            {"Retry-After": "5"})


def install(app: FastAPI) -> None:
    """Register the handlers that give every error the problem shape."""
    app.add_exception_handler(Problem, _problem)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(RequestValidationError, _validation)
    for error in DATABASE_ERRORS:
        app.add_exception_handler(error, _database)
    app.add_exception_handler(Exception, _unexpected)
