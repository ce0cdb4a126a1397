"""Broker tests: `start_worker`, a BrokerWorker on the test's schema in a thread of the test;
the schema's stream is deleted after a test on the shared NATS (CI's service keeps no litter)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from brokerhelpers import Running

from cachequeue import db
from cachequeue.broker import BrokerWorker, Publisher


@pytest.fixture
def start_worker(schema) -> Iterator[Callable[..., Running]]:
    """start_worker(handlers, url=..., **options): a BrokerWorker on the test's schema,
    running in a thread; every one is stopped after the test."""
    started: list[Running] = []

    def start(handlers, *, url, **options) -> Running:
        running = Running(BrokerWorker(schema, handlers, url=url,
                                       connect_db=lambda: db.connect(schema), **options))
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()


@pytest.fixture(autouse=True)
def _delete_the_stream(request):
    """After a test that used `schema` on the shared NATS: delete that schema's stream."""
    names = set(request.fixturenames)
    if not {"schema", "nats_url"} <= names:
        yield
        return
    schema, url = request.getfixturevalue("schema"), request.getfixturevalue("nats_url")
    yield
    with Publisher(schema, url=url) as pub:
        pub.delete_stream()
