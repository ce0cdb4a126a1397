"""Where the browser tests find Chromium, and the one line they print when it is missing.

The tests drive Debian's `chromium` with the `playwright` wheel through `executable_path`
(`playwright install` cannot download a browser here). $CACHEQUEUE_CHROMIUM overrides the
path. When no browser is found, every browser test is skipped with SKIP_LINE, which the
root conftest.py also prints in the header of the run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SKIP_LINE = "browser tests skipped: install chromium"
# What the machine's probe found to work headless and offline: no sandbox (we are root in
# CI), no GPU, and no background traffic (updates, sync, QUIC) that a closed network refuses.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    """The Chromium executable to use, or None."""
    given = os.environ.get("CACHEQUEUE_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None
