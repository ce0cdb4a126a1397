"""serve's connection bounds (issue 32, item 7): a connection that sends no request head, or
sends it a byte at a time (slowloris), is closed at the head deadline; a request that has
begun (a long stream) is not cut by it. A real uvicorn on a loopback socket, with a 1 s
deadline; loopback only."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
import uvicorn

from cachequeue.cli.serving import BoundedH11Protocol, listen_socket


class QuickHeads(BoundedH11Protocol):
    header_seconds = 1.0


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})
    if scope["path"] == "/slow":  # a response that lasts past the head deadline
        for _ in range(5):
            await send({"type": "http.response.body", "body": b"tick\n", "more_body": True})
            await asyncio.sleep(0.5)
    await send({"type": "http.response.body", "body": b"done\n"})


@pytest.fixture
def server():
    sock = listen_socket("127.0.0.1", 0)
    config = uvicorn.Config(app, http=QuickHeads, log_config=None, timeout_keep_alive=1,
                            lifespan="off")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started and time.monotonic() < deadline:
        time.sleep(0.01)
    yield sock.getsockname()[1]
    uv.should_exit = True
    thread.join(30)


def closed_after(conn: socket.socket, limit: float, trickle: bytes = b"") -> float | None:
    """Seconds until the server closed `conn` (None: still open after `limit`), sending
    one byte of `trickle` every 0.2 s meanwhile."""
    started = time.monotonic()
    conn.settimeout(0.2)
    sent = 0
    while time.monotonic() - started < limit:
        try:
            if conn.recv(1024) == b"":
                return time.monotonic() - started
        except TimeoutError:
            pass
        if sent < len(trickle):
            try:
                conn.sendall(trickle[sent:sent + 1])
            except OSError:
                return time.monotonic() - started
            sent += 1
    return None


def test_a_silent_connection_is_closed_at_the_head_deadline(server):
    with socket.create_connection(("127.0.0.1", server)) as conn:
        seconds = closed_after(conn, 10)
    assert seconds is not None and seconds < 5, seconds


def test_a_head_sent_a_byte_at_a_time_is_closed_at_the_deadline(server):
    head = b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 200
    with socket.create_connection(("127.0.0.1", server)) as conn:
        seconds = closed_after(conn, 10, trickle=head)
    assert seconds is not None and seconds < 5, seconds


def test_a_request_that_began_is_not_cut_and_a_quick_one_is_answered(server):
    with socket.create_connection(("127.0.0.1", server)) as conn:
        conn.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.settimeout(10)
        received = b""
        while b"done\n" not in received:
            chunk = conn.recv(4096)
            if not chunk:
                break
            received += chunk
    assert received.count(b"tick") == 5 and b"done" in received  # 2.5 s > the 1 s deadline
    with socket.create_connection(("127.0.0.1", server)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.settimeout(10)
        assert conn.recv(4096).startswith(b"HTTP/1.1 200")
