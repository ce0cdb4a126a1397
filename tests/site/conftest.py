"""The course tools (tools/*.py, not a package) are importable by name in these tests, and
the real site is built once per test session (`site`), for every test that reads it."""

import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

import sitebuild  # noqa: E402

SITE = sitebuild.ROOT / "build" / "site"


@pytest.fixture(scope="session")
def site():
    """(folder, chapters): the real site, built from the committed notebooks into build/site/
    once per session (per xdist worker) and shared by every test that reads it."""
    return SITE, sitebuild.build(SITE)
