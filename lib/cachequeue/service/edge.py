"""What every request meets around its route: a body cap, an answer to OPTIONS, and a count.

`Edge(app, ...)` wraps the routed application (plain ASGI, outermost, so it also sees the
requests no route takes):

- **Body cap.** No request may send more than `limit` bytes (requests.MAX_BODY_BYTES): a
  declared Content-Length over it is a 413 before the application runs, and a body that
  streams past it (chunked, or a Content-Length that lied) stops being read there and
  ends in a 413. Routes read their bodies after authentication and may have smaller caps;
  this bound holds for every route, also those that never read a body.
- **OPTIONS.** `OPTIONS /v1/jobs` answers 204 with `Allow: OPTIONS, POST`: the methods of
  the routes on that path (404 when none is). FastAPI answers OPTIONS only for routes
  that declare it, and nothing else may claim the path.
- **Unexpected errors.** An exception no handler took, raised before the response began, is
  answered here: a 500 problem (`problems.unexpected_response`, logged with its type only),
  and the exception goes no further. Starlette's outermost middleware would answer the same
  500 and then re-raise, and uvicorn closes a connection whose application raised: the
  client's next request on that kept-alive connection met a reset.
- **Counts.** Each answer is counted in the per-process `exporter.ProcessMetrics` by route
  template (`/v1/jobs/{job_id}`, never the path itself, so the label set is bounded),
  method and status, with its duration.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .exporter import ProcessMetrics
from .problems import problem_response, unexpected_response

__all__ = ["Edge"]

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


class _TooLarge(Exception):
    pass


class Edge:
    """The ASGI wrapper described in the module docstring."""

    def __init__(self, app: ASGIApp, *, router: Any, limit: int,
                 metrics: ProcessMetrics | None = None) -> None:
        self.app = app
        self.router = router  # the routes OPTIONS is answered from
        self.limit = limit
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self._handle(scope, receive, counted)
        finally:
            if self.metrics is not None:
                route = scope.get("route")
                template = getattr(route, "path", None) or "unmatched"
                self.metrics.answered(template, scope["method"], status["code"],
                                      time.perf_counter() - started)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._too_large(scope, receive, send, int(declared))
            return
        if scope["method"] == "OPTIONS":
            await self._options(scope, receive, send)
            return
        size, started = 0, False

        async def bounded() -> Message:
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > self.limit:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded, watched)
        except _TooLarge:
            if started:
                raise
            await self._too_large(scope, receive, send, size)
        except Exception as exc:
            if started:  # a started answer cannot become a 500: uvicorn ends the connection
                raise
            await unexpected_response(scope.get("path", ""), exc)(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, size: int) -> None:
        answer = problem_response(413, "content_too_large",
                                  f"the request body is {size} bytes or more; "
                                  f"the limit is {self.limit}", {"Connection": "close"})
        await answer(scope, receive, send)

    async def _options(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Ask the router, method by method, which ones a route takes fully on this path.
        methods = {method for method in _METHODS
                   if any(route.matches({**scope, "method": method})[0] == Match.FULL
                          for route in self.router.routes)}
        if not methods:
            answer = problem_response(404, "not_found", "nothing is served at this path")
        else:
            answer = Response(status_code=204,
                              headers={"Allow": ", ".join(sorted(methods | {"OPTIONS"}))})
        await answer(scope, receive, send)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1").strip()
    return None
