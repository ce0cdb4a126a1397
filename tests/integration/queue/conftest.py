"""Fixtures of the queue's integration tests: `harness`, the turn-by-turn worker of
test_worker_turns and test_worker_prefetch (turns.Harness)."""

import pytest
from turns import Harness


@pytest.fixture
def harness(schema):
    """harness(handlers, **worker_options) -> a Harness; its workers are closed at the end."""
    made = []

    def make(handlers, **kw):
        h = Harness(schema, handlers, **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.worker.close()
