"""Browser tests: a real headless Chromium (Debian's, driven by playwright) against the
service running as a real process. Where Chromium is, its flags and the one "skipped" line
come from `cachequeue.course.procs.browser`, shared with chapter 07's screenshot and the
course site's browser checks (tools/browser.py)."""

from __future__ import annotations

import pytest

from cachequeue.course.procs import browser as chromium_tools


@pytest.fixture
def browser(tmp_path):
    """A persistent Chromium context on a fresh, empty profile folder (tabs share its
    localStorage, as a person's browser does)."""
    executable = chromium_tools.chromium()
    if executable is None:
        pytest.skip(chromium_tools.SKIP_LINE)
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=executable, headless=True,
            args=chromium_tools.FLAGS)
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()
