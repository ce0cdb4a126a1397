"""Broker tests: `start_worker`, a BrokerWorker on the test's schema in a thread of the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from brokerhelpers import Running

from cachequeue import db
from cachequeue.broker import BrokerWorker


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
