"""Helpers of the embedded-server tests (`embedded_redis`, `embedded_nats`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def started_by_two_processes(module: str, server: Any) -> Iterator[None]:
    """Start `server`'s folder from two processes at once (`module`.Server(folder).start()):
    both print its URL, and a third start reuses it instead of restarting it. The block
    looks at the running server; on the way out the server is stopped, and stays stopped."""
    start = f"from {module} import Server; import sys; print(Server(sys.argv[1]).start())"
    try:
        procs = [subprocess.Popen([sys.executable, "-c", start, str(server.folder)],
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]
        urls = [proc.communicate(timeout=60)[0].strip() for proc in procs]
        assert urls == [server.url, server.url]
        assert server.running
        pid = server.pid()
        assert server.start() == server.url and server.pid() == pid  # reused, not restarted
        yield
    finally:
        assert server.stop() is True
    assert not server.running and server.pid() is None
    assert server.stop() is False
