"""Root pytest configuration: nbval compares notebook outputs, but not what went to stderr;
executed notebooks are marked `db`.

Library warnings (a DeprecationWarning in one environment, none in another) land on
stderr; they are not part of what a notebook teaches, so strict nbval ignores them on both
sides of the comparison. Everything printed to stdout and every displayed value is still
compared exactly (after tests/sanitize.cfg).
"""

from __future__ import annotations

import pytest


def _without_stderr(outputs):
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


def pytest_collection_modifyitems(items):
    """Executed notebooks need the database: mark them `db` like the integration tests."""
    for item in items:
        if str(item.fspath).endswith(".ipynb"):
            item.add_marker(pytest.mark.db)


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("nbval"):
        return
    from nbval.plugin import IPyNbCell

    original = IPyNbCell.compare_outputs
    if getattr(original, "_ignores_stderr", False):
        return

    def compare_outputs(self, test, ref, skip_compare=None):
        return original(self, _without_stderr(test), _without_stderr(ref), skip_compare)

    compare_outputs._ignores_stderr = True
    IPyNbCell.compare_outputs = compare_outputs


@pytest.fixture(scope="session")
def database_url():
    """The URL every test uses: DATABASE_URL, else the embedded server (started once)."""
    from cachequeue import db

    return db.database_url()
