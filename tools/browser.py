"""Headless Chromium for the course's browser checks: where it is, how it starts, what it sees.

    python tools/browser.py check     # prints one "skipped" line and exits 1 without chromium

The checks drive Debian's `chromium` (apt-get install chromium) through the playwright
wheel with `executable_path`: `playwright install` would download a browser build, which a
machine without internet cannot. Chromium starts with a fresh profile and without its own
background traffic (updates, sync, safe browsing), so every request it makes comes from the
page under test. `serve` publishes a folder on 127.0.0.1 only, on a free port.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["FLAGS", "SKIP_LINE", "chromium", "launch", "serve"]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SKIP_LINE = "browser tests skipped: install chromium (apt-get install chromium)"


def chromium() -> str | None:
    """Path of the Chromium executable, or None when it is not installed.

    CHROMIUM=/path/to/chromium picks another build (CHROMIUM= with no path: none at all)."""
    if "CHROMIUM" in os.environ:
        candidates = [os.environ["CHROMIUM"]]
    else:
        candidates = [shutil.which("chromium"), "/usr/bin/chromium"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@contextlib.contextmanager
def launch(viewport=(1280, 900)) -> Iterator:
    """A playwright BrowserContext in Debian's Chromium with a throw-away profile."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    if executable is None:
        raise RuntimeError(SKIP_LINE)
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, \
            sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True, args=FLAGS, locale="zh-CN",
            viewport={"width": viewport[0], "height": viewport[1]})
        try:
            yield context
        finally:
            context.close()


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
