"""Browser tests: a real headless Chromium (Debian's, driven by playwright) against the
service running as a real process. Where Chromium is, its flags and the one "skipped" line
come from `cachequeue.course.procs.browser`, shared with chapter 07's screenshot and the
course site's browser checks (tools/browser.py)."""

from __future__ import annotations

import pytest

from cachequeue.course.procs import browser as chromium_tools


@pytest.fixture(scope="module")
def chromium():
    """One Chromium process for the module's tests (a start costs about a second of CPU);
    each test gets a context of its own from it (`browser`)."""
    executable = chromium_tools.chromium()
    if executable is None:
        pytest.skip(chromium_tools.SKIP_LINE)
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")
    with sync_api.sync_playwright() as playwright:
        started = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=chromium_tools.FLAGS)
        try:
            yield started
        finally:
            started.close()


@pytest.fixture
def browser(chromium):
    """A fresh browser context, as a new, empty profile: nothing stored by another test (its
    tabs share localStorage with each other, as a person's browser does)."""
    context = chromium.new_context()
    context.set_default_timeout(30_000)
    try:
        yield context
    finally:
        context.close()
