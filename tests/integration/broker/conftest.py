"""Broker tests: `start_worker`, a BrokerWorker on the test's schema in a thread of the test;
the schema's stream is deleted after a test on the shared NATS (CI's service keeps no litter)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from cachequeue import db
from cachequeue.broker import BrokerWorker, Publisher


@pytest.fixture
def start_worker(schema) -> Iterator[Callable[..., BrokerWorker]]:
    """start_worker(handlers, url=..., **options): a BrokerWorker on the test's schema,
    started in its own thread (`BrokerWorker.start`); `close()` stops it and gives its
    counts. Every one still running is closed after the test."""
    started: list[BrokerWorker] = []

    def start(handlers, *, url, **options) -> BrokerWorker:
        worker = BrokerWorker(schema, handlers, url=url, connect_db=lambda: db.connect(schema),
                              **options)
        started.append(worker.start())
        return worker

    yield start
    for worker in started:
        if worker.alive:
            worker.close()


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
