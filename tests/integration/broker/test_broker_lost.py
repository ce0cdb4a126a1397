"""The broker lost mid-run: a private nats-server SIGKILLed while the worker runs jobs, then
started again on the same port and store. The worker reconnects with backoff; every job has
exactly one result, none is lost, none is run to completion twice."""

from __future__ import annotations

import threading
import time

import pytest
from brokerhelpers import wait_for

from cachequeue import db
from cachequeue.broker import Publisher, fence, names

pytestmark = pytest.mark.nats

JOBS = 60


def test_a_killed_and_restarted_broker_loses_and_doubles_nothing(schema, private_nats,
                                                                 start_worker):
    done: list[int] = []
    lock = threading.Lock()

    def work(payload):
        time.sleep(0.01)
        with lock:
            done.append(payload["n"])
        return {"n": payload["n"]}

    def results() -> int:
        with db.connect(schema) as conn:
            return fence.counts(conn, names(schema).stream)["results"]

    with Publisher(schema, url=private_nats.url) as pub:
        for n in range(JOBS):
            pub.submit("work", {"n": n}, msg_id=f"n-{n}")
    running = start_worker({"work": work}, url=private_nats.url, concurrency=2, lease=5,
                           reconnect_wait=0.2)
    wait_for(lambda: results() >= 10, what="the first results")
    assert private_nats.kill() is True  # SIGKILL, mid-run
    before = results()
    assert before < JOBS, "the run ended before the broker was killed; nothing was tested"
    time.sleep(0.5)  # the worker meets a dead broker for a while (it backs off, retries)
    private_nats.start()  # same port, same store
    wait_for(lambda: results() == JOBS, 60, "every job's result after the restart")
    stats = running.close()
    assert stats["reconnects"] >= 1
    with db.connect(schema) as conn:
        rows = fence.results(conn, names(schema).stream)
        assert fence.counts(conn, names(schema).stream)["dead_letters"] == 0
    assert sorted(r["result"]["n"] for r in rows) == list(range(JOBS))  # none lost, none twice
    # A handler may have run again for a job whose ack died with the broker; its result was
    # kept once (the fence: 'done', or a refused stale write), never twice.
    assert set(done) == set(range(JOBS))
    assert stats["finished"] == JOBS  # each result accepted exactly once
    with Publisher(schema, url=private_nats.url) as pub:
        assert pub.stream_state()["messages"] == 0  # every message acknowledged
