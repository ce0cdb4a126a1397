"""Root pytest configuration: nbval compares notebook outputs, but not what went to stderr;
executed notebooks are marked `db`.

Library warnings (a DeprecationWarning in one environment, none in another) land on
stderr; they are not part of what a notebook teaches, so strict nbval ignores them on both
sides of the comparison. Everything printed to stdout and every displayed value is still
compared exactly (after tests/sanitize.cfg).
"""

from __future__ import annotations

import functools

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


@functools.cache
def _servers():
    """The set-up step, once per test process: DATABASE_URL, else the embedded PostgreSQL;
    REDIS_URL, else the embedded Redis; each started here if it is not running. Clients
    (`db.connect`, `shared.connect`) never start a server."""
    from cachequeue import servers

    return servers.start()


def pytest_runtest_setup(item):
    """Tests and notebook cells marked `db` (notebooks only connect, from their kernels) find
    the servers running, whether or not `make db` ran first."""
    if item.get_closest_marker("db") is not None:
        _servers()


@pytest.fixture(scope="session")
def database_url():
    """The URL every test uses: DATABASE_URL, else the embedded server (started if needed)."""
    return _servers().database
