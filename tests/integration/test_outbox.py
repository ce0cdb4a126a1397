"""The outbox: event and change commit together; a relay killed between publish and mark
delivers again, the consumer drops the duplicate by event id; nothing is lost."""

import pytest

from cachequeue.course import relaylab
from cachequeue.queue import jobs, outbox


def _submit_with_event(conn, n):
    with conn.transaction():
        job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n})
        outbox.add(conn, "job.submitted", {"job_id": job_id, "n": n})
    return job_id


def test_a_rolled_back_change_writes_no_event(conn):
    outbox.install(conn)
    with pytest.raises(LookupError), conn.transaction():
        jobs.submit(conn, tenant_id=1, kind="noop", payload={})
        outbox.add(conn, "job.submitted", {})
        raise LookupError("the business change fails after the event was written")
    assert outbox.counts(conn) == {"written": 0, "published": 0, "waiting": 0}
    with pytest.raises(RuntimeError, match="inside the business change's transaction"):
        outbox.add(conn, "job.submitted", {})


def test_a_relay_killed_between_publish_and_mark_loses_nothing(conn, schema):
    relaylab.install(conn)
    for n in range(3):
        _submit_with_event(conn, n)
    relay = relaylab.RelayProcess(schema, hold_after=2).start()
    relay.wait_for("holding")
    assert relay.kill() == -9
    assert len(relaylab.messages(conn)) == 2  # the broker has two events ...
    assert outbox.counts(conn)["published"] == 0  # ... that the outbox never marked
    second = relaylab.RelayProcess(schema).start()
    assert second.wait() == 0 and second.lines[-1] == "relayed count=3"
    assert outbox.counts(conn) == {"written": 3, "published": 3, "waiting": 0}
    seen = []
    counts = relaylab.consume(conn, lambda payload: seen.append(payload["n"]))
    assert counts == {"delivered": 5, "handled": 3, "duplicates": 2}
    assert sorted(seen) == [0, 1, 2]  # each event handled once, none lost
