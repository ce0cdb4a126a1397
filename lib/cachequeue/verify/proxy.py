"""A small TCP proxy in front of PostgreSQL that injects network faults, in the shape of
Shopify's toxiproxy (https://github.com/Shopify/toxiproxy): clients connect to a loopback
port, the proxy forwards each connection to the server's Unix socket, and "toxics" are
switched on and off while it runs.

- `delay(seconds, for_)`: every chunk waits `seconds` before it is forwarded;
- `blackhole(for_)`: nothing is forwarded either way (a partition); held bytes are
  dropped and the connections cut when it ends, as a real partition's timeouts would;
- `cut()`: every open connection is closed at once (a reset);
- `cut_after_commit(marker)`: the ambiguous commit. The next statement whose bytes contain
  `marker` is forwarded; the server's reply is read up to its ReadyForQuery (so the
  transaction has committed) and thrown away, and the connection is cut: the client saw
  its statement go out and never learns that it committed. psycopg must send the
  statement text each time (`prepare_threshold=None`) for the marker to be seen.

Everything is bounded: each toxic ends by itself (`for_` seconds), and `close()` stops the
proxy. `on_event(name, **fields)` hears when a toxic fires (the nemesis records it).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Proxy"]

_READY = b"Z\x00\x00\x00\x05"  # ReadyForQuery: the server finished the statement (and commit)


class _Pipe:
    def __init__(self, proxy: Proxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy, self.client, self.server = proxy, client, server
        self.closed = False
        self.doomed = False  # a cut-after-commit statement went out: drop the reply, then cut
        self.reply = b""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for s in (self.client, self.server):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()
        self.proxy._forget(self)

    def pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        try:
            while not self.closed:
                data = source.recv(65536)
                if not data:
                    break
                self.proxy._hold()
                if self.closed:
                    break
                if upstream:
                    if self.proxy._arm_for(self, data):
                        self.doomed = True
                    sink.sendall(data)
                elif self.doomed:
                    self.reply = (self.reply + data)[-64:]
                    if _READY in self.reply:
                        self.proxy._fired(self)
                        break
                else:
                    sink.sendall(data)
        except OSError:
            pass
        self.close()


class Proxy:
    """Listen on 127.0.0.1 (a free port), forward to the Unix socket `target`."""

    def __init__(self, target: str | Path, *,
                 on_event: Callable[..., Any] | None = None) -> None:
        self.target = str(target)
        self.on_event = on_event or (lambda name, **fields: None)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._pipes: set[_Pipe] = set()
        self._lock = threading.Lock()
        self._delay = 0.0
        self._delay_until = 0.0
        self._blackholes = 0  # partitions in force
        self._marker: bytes | None = None
        self._stopped = False
        self.counts = {"connections": 0, "cut": 0, "ambiguous": 0}
        threading.Thread(target=self._accept, daemon=True, name="proxy-accept").start()

    # ------------------------------------------------------------------ toxics

    def delay(self, seconds: float, for_: float) -> None:
        self._delay, self._delay_until = seconds, time.monotonic() + for_

    def blackhole(self, for_: float) -> None:
        self._blackholes += 1

        def heal() -> None:
            time.sleep(for_)
            self.cut()  # first cut, then let bytes flow: nothing held is ever delivered
            with self._lock:
                self._blackholes -= 1
        threading.Thread(target=heal, daemon=True).start()

    def cut(self) -> int:
        with self._lock:
            pipes = list(self._pipes)
        for pipe in pipes:
            pipe.close()
        self.counts["cut"] += len(pipes)
        return len(pipes)

    def cut_after_commit(self, marker: bytes, for_: float) -> None:
        """Arm the ambiguous commit for the next statement containing `marker`, for at most
        `for_` seconds."""
        with self._lock:
            self._marker = marker
        def disarm() -> None:
            time.sleep(for_)
            with self._lock:
                self._marker = None
        threading.Thread(target=disarm, daemon=True).start()

    # ------------------------------------------------------------------ plumbing

    def _arm_for(self, pipe: _Pipe, data: bytes) -> bool:
        with self._lock:
            if self._marker is not None and self._marker in data:
                self._marker = None
                return True
        return False

    def _fired(self, pipe: _Pipe) -> None:
        self.counts["ambiguous"] += 1
        self.on_event("cut", after="commit")

    def _hold(self) -> None:
        """Wait out a delay; block while a blackhole lasts."""
        while self._blackholes and not self._stopped:
            time.sleep(0.01)
        if time.monotonic() < self._delay_until:
            time.sleep(self._delay)

    def _forget(self, pipe: _Pipe) -> None:
        with self._lock:
            self._pipes.discard(pipe)

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                server.connect(self.target)
            except OSError:
                client.close()
                server.close()
                continue
            pipe = _Pipe(self, client, server)
            with self._lock:
                self._pipes.add(pipe)
            self.counts["connections"] += 1
            for source, sink, up in ((client, server, True), (server, client, False)):
                threading.Thread(target=pipe.pump, args=(source, sink, up), daemon=True).start()

    def close(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self.cut()
