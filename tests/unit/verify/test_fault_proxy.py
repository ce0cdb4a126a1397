"""The fault proxy against a stand-in server on a Unix socket: it forwards, cuts, and makes
the ambiguous commit (the statement reaches the server, its reply never reaches the client)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from cachequeue.verify.proxy import Proxy

READY = b"Z\x00\x00\x00\x05I"


@pytest.fixture
def server(tmp_path):
    """A stand-in server: answers every chunk with 'got:<chunk>' and a ReadyForQuery, and
    remembers what it received."""
    path = tmp_path / "s.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    received: list[bytes] = []

    def serve(conn):
        with conn:
            while data := conn.recv(4096):
                received.append(data)
                conn.sendall(b"got:" + data + READY)

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield path, received
    listener.close()


def connect(proxy):
    client = socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
    return client


def test_it_forwards_both_ways(server):
    path, received = server
    proxy = Proxy(path)
    client = connect(proxy)
    client.sendall(b"SELECT 1")
    assert client.recv(100) == b"got:SELECT 1" + READY
    proxy.close()


def test_the_ambiguous_commit_reaches_the_server_and_never_answers(server):
    path, received = server
    events = []
    proxy = Proxy(path, on_event=lambda name, **f: events.append((name, f)))
    client = connect(proxy)
    client.sendall(b"SELECT 1")
    assert client.recv(100).startswith(b"got:SELECT 1")
    proxy.cut_after_commit(b"job_results", for_=5)
    client.sendall(b"INSERT INTO job_results ...")
    assert client.recv(100) == b""  # closed, with no byte of the reply
    assert received[-1] == b"INSERT INTO job_results ..."  # but the server had it
    assert events == [("cut", {"after": "commit"})] and proxy.counts["ambiguous"] == 1
    proxy.close()


def test_a_cut_closes_every_connection(server):
    proxy = Proxy(server[0])
    clients = [connect(proxy) for _ in range(3)]
    for c in clients:
        c.sendall(b"x")
        c.recv(100)
    assert proxy.cut() == 3
    assert all(c.recv(100) == b"" for c in clients)
    proxy.close()


def test_a_blackhole_holds_everything_then_cuts(server):
    path, received = server
    proxy = Proxy(path)
    client = connect(proxy)
    proxy.blackhole(0.5)
    start = time.monotonic()
    client.sendall(b"lost in the partition")
    assert client.recv(100) == b""  # nothing came back; the heal cut the connection
    assert time.monotonic() - start >= 0.45
    assert b"lost in the partition" not in received
    proxy.close()


def test_a_delay_slows_each_chunk(server):
    proxy = Proxy(server[0])
    client = connect(proxy)
    proxy.delay(0.2, for_=5)
    start = time.monotonic()
    client.sendall(b"slow")
    client.recv(100)
    assert time.monotonic() - start >= 0.35  # once on the way in, once on the way out
    proxy.close()
