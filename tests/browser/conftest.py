"""Browser tests: a real headless Chromium (Debian's, driven by playwright) against the
service running as a real process."""

from __future__ import annotations

import pytest
from chromium import FLAGS, SKIP_LINE, find_chromium


@pytest.fixture
def browser(tmp_path):
    """A persistent Chromium context on a fresh, empty profile folder (tabs share its
    localStorage, as a person's browser does)."""
    executable = find_chromium()
    if executable is None:
        pytest.skip(SKIP_LINE)
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=executable, headless=True, args=FLAGS)
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()
