"""Fixtures of the service tests: `live` (the course's app on a real uvicorn socket, in a
thread of the test process, on the test's own schema) and `make_live` (the same, with
settings). Helpers are in servicekit.py."""

from __future__ import annotations

import pytest
from servicekit import Live, serve, stop

from cachequeue.course.app import webapp


@pytest.fixture
def make_live(schema):
    """Start the course's app on the test's schema (settings as keyword arguments)."""
    started = []

    def start(**settings) -> Live:
        app = webapp.create_app(schema, **settings)
        server, thread, url, metrics_url = serve(app, operator=True)
        started.append((app, server, thread))
        return Live(app, server, url, metrics_url)

    yield start
    for app, server, thread in started:
        stop(app, server, thread)


@pytest.fixture
def live(make_live) -> Live:
    return make_live()
