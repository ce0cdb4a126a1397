"""Headless Chromium for the course's browser checks: where it is, how it starts, what it sees.

    python tools/browser.py check     # prints one "skipped" line and exits 1 without chromium

Where Chromium is, its flags, the skip line and `launch` are the library's
(`cachequeue.course.procs.browser`: Debian's `chromium` through the playwright wheel with
`executable_path`, a fresh profile, no background traffic), shared with chapter 07's
screenshot and tests/browser/. `serve` publishes a folder on 127.0.0.1 only, on a free port.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cachequeue.course.procs.browser import FLAGS, SKIP_LINE, chromium, launch

__all__ = ["FLAGS", "SKIP_LINE", "chromium", "launch", "serve"]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class names it so)
        pass


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve `directory` over HTTP on 127.0.0.1 (a free port); yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def main(argv: list[str]) -> int:
    if argv != ["check"]:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    if chromium() is None:
        print(SKIP_LINE)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
