"""Chapter 09's outbox relay publishing to JetStream: the event id is the Nats-Msg-Id, so an
event published again (the relay lost its connection after publishing, before marking) is
stored once, and the worker runs it once."""

from __future__ import annotations

import pytest
from brokerhelpers import wait_for

from cachequeue import db
from cachequeue.broker import Publisher, fence, names
from cachequeue.queue import outbox

pytestmark = pytest.mark.nats


def test_a_republished_outbox_event_is_dropped_by_its_message_id(conn, schema, nats_url,
                                                                   start_worker):
    def results():
        with db.connect(schema) as c:
            return fence.results(c, names(schema).stream)

    outbox.install(conn)
    fence.install(conn)  # counted before the worker installs it too
    with conn.transaction():  # the business change and its events commit together
        ids = [outbox.add(conn, "double", {"n": n}) for n in range(5)]
    with Publisher(schema, url=nats_url) as pub:
        def dies_after_publishing(event):
            pub.publish_event(event)
            if event.payload["n"] == 2:
                raise ConnectionError("the relay lost its database after publishing")

        with pytest.raises(ConnectionError):
            outbox.relay_once(conn, dies_after_publishing)
        assert pub.stream_state()["messages"] == 3  # events 0, 1, 2 are in the stream
        assert outbox.relay_once(conn, pub.publish_event) == 3  # 2 again, then 3 and 4
        assert pub.stream_state()["messages"] == 5  # event 2's second copy was dropped
        running = start_worker({"double": lambda p: {"twice": 2 * p["n"]}}, url=nats_url)
        wait_for(lambda: len(results()) == 5, what="five results")
        assert running.close()["finished"] == 5
    rows = results()
    assert sorted(r["msg_id"] for r in rows) == sorted(str(i) for i in ids)
    assert sorted(r["result"]["twice"] for r in rows) == [0, 2, 4, 6, 8]
