"""Headless Chromium as a real process: where it is, how it starts, and why it cannot here.

    missing()            # None, or one line saying why no browser can run on this machine
    with launch() as context:
        page = context.new_page(); page.goto(url); png = page.screenshot()
    async with alaunch() as context:        # the same, where an event loop runs (Jupyter)
        page = await context.new_page(); await page.goto(url)

Debian's `chromium` (apt-get install chromium) driven by the playwright wheel with
`executable_path`: `playwright install` would download a browser build, which a machine
without internet cannot. Chromium starts with a fresh profile and without its own
background traffic (updates, sync, safe browsing), so every request it makes comes from
the page under test. Chapter 07 takes its screenshot of the service's page this way; the
browser tests (tests/browser/) and the course site's checks (tools/browser.py) use the same
flags and print SKIP_LINE when there is no chromium.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

__all__ = ["FLAGS", "SKIP_LINE", "alaunch", "chromium", "launch", "missing"]

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


def missing() -> str | None:
    """Why no browser can be launched here, in one line; None when one can."""
    if chromium() is None:
        return "chromium is not installed (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright wheel is not installed (pip install -e '.[site]')"
    return None


def _start(viewport: tuple[int, int]) -> dict[str, Any]:
    """The options of a persistent context: Debian's Chromium, headless, our flags."""
    reason = missing()
    if reason is not None:
        raise RuntimeError(reason)
    return {"executable_path": chromium(), "headless": True, "args": FLAGS, "locale": "zh-CN",
            "viewport": {"width": viewport[0], "height": viewport[1]}}


@contextlib.contextmanager
def launch(viewport: tuple[int, int] = (1280, 900)) -> Iterator[Any]:
    """A playwright BrowserContext in Debian's Chromium with a throw-away profile;
    RuntimeError (with the reason from `missing`) when none can start."""
    options = _start(viewport)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, \
            sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, **options)
        try:
            yield context
        finally:
            context.close()


@contextlib.asynccontextmanager
async def alaunch(viewport: tuple[int, int] = (1280, 900)) -> AsyncIterator[Any]:
    """`launch` for code inside a running event loop (a Jupyter kernel, where playwright's
    sync API refuses to start): an async BrowserContext."""
    options = _start(viewport)
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        async with async_playwright() as pw:
            context = await pw.chromium.launch_persistent_context(profile, **options)
            try:
                yield context
            finally:
                await context.close()
