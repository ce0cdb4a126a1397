"""Helpers of the service tests: a real uvicorn on a loopback socket in a thread, tokens, waits.

`live` serves the course's app (`course.webapp.create_app`) on the test's own schema; the
test talks HTTP to `live.url` with httpx and can still look inside (`live.service`: the
pool, the hub). The operator listener (`service.operator_app`, /metrics) is served on a
second socket of the same server, `live.metrics_url`, as `cachequeue serve
--metrics-port` does. Streams are tested on this socket: httpx's in-process ASGI transport
buffers a response until it ends, which an event stream never does.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx
import uvicorn

from cachequeue.cli.serving import KEEP_ALIVE_SECONDS, Listeners, listen_socket
from cachequeue.course.app import webapp
from cachequeue.service import begin_shutdown, operator_app

USERS = {u["id"]: u for u in webapp.sample_users()}


# The Authorization header of a sample user (10, 11, 12 in tenant 1; 20, 21 in tenant 2).
auth = webapp.bearer


def wait_until(condition, timeout: float = 10.0, what: str = "condition"):
    """Poll a cheap in-process condition until it holds (it becomes true on its own)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not hold within {timeout} s")
        time.sleep(0.01)


@dataclass
class Live:
    app: object
    server: uvicorn.Server
    url: str
    metrics_url: str = ""

    @property
    def service(self):
        return self.app.state.service

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **kw)

    def operator(self, **kw) -> httpx.Client:
        """A client of the operator listener (/metrics)."""
        return httpx.Client(base_url=self.metrics_url, timeout=10, **kw)


def serve(app, *, operator: bool = False):
    """Serve `app` in a thread; (server, thread, url), plus the operator listener's url
    when `operator` (then the server has two sockets, as `cachequeue serve --metrics-port`)."""
    socks = [listen_socket("127.0.0.1", 0)]
    served = app
    if operator:
        socks.append(listen_socket("127.0.0.1", 0))
        served = Listeners(app, operator_app(app), socks[1].getsockname()[1])
    # log_config=None: uvicorn's loggers propagate to the root logger, where caplog sees them.
    server = uvicorn.Server(uvicorn.Config(served, log_config=None, log_level="debug",
                                           timeout_graceful_shutdown=5,
                                           timeout_keep_alive=KEEP_ALIVE_SECONDS))
    thread = threading.Thread(target=server.run, kwargs={"sockets": socks}, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), 30, "uvicorn startup")
    assert server.started, "uvicorn did not start"
    urls = [f"http://127.0.0.1:{sock.getsockname()[1]}" for sock in socks]
    return (server, thread, *urls)


def stop(app, server, thread) -> None:
    begin_shutdown(app)
    server.should_exit = True
    thread.join(30)
    assert not thread.is_alive(), "uvicorn did not stop"
