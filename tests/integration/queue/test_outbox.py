"""The outbox: event and change commit together; the relay claims, commits, publishes with
no transaction open, then marks; a relay killed between publish and mark delivers again
after its lease, the consumer drops the duplicate by event id; nothing is lost."""

from datetime import timedelta

import pytest
from psycopg.pq import TransactionStatus

from cachequeue import db
from cachequeue.course.procs import relaylab
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


def test_the_relay_publishes_with_no_transaction_open(conn, schema):
    outbox.install(conn)
    for n in range(3):
        _submit_with_event(conn, n)
    seen = []
    with db.connect(schema) as relay_conn:
        pid = relay_conn.info.backend_pid

        def publish(event):
            # Claim, commit, publish, mark: while the broker is called, the relay's
            # connection holds no transaction (and so no lock and no snapshot).
            assert relay_conn.info.transaction_status == TransactionStatus.IDLE
            assert relaylab.session(conn, pid) == {"state": "idle", "xact_start": None}
            seen.append(event.payload["n"])

        assert outbox.relay_once(relay_conn, publish) == 3
    assert seen == [0, 1, 2]
    assert outbox.counts(conn) == {"written": 3, "published": 3, "waiting": 0}


def test_relay_once_refuses_a_connection_inside_a_transaction(conn):
    outbox.install(conn)
    _submit_with_event(conn, 0)
    with pytest.raises(RuntimeError, match="no transaction open"), conn.transaction():
        outbox.relay_once(conn, lambda event: None)
    assert outbox.counts(conn) == {"written": 1, "published": 0, "waiting": 1}


def test_a_failed_publish_marks_what_went_out_and_gives_the_rest_back(conn):
    outbox.install(conn)
    for n in range(3):
        _submit_with_event(conn, n)
    sent = []

    def flaky(event):
        if event.payload["n"] == 1:
            raise ConnectionError("the broker went away")
        sent.append(event.payload["n"])

    with pytest.raises(ConnectionError):
        outbox.relay_once(conn, flaky)
    assert sent == [0] and outbox.counts(conn)["published"] == 1
    # The two that did not go out are claimable again at once, not after the lease.
    assert outbox.relay_once(conn, lambda event: sent.append(event.payload["n"])) == 2
    assert sent == [0, 1, 2] and outbox.counts(conn)["waiting"] == 0


def test_a_relay_killed_between_publish_and_mark_loses_nothing(conn, schema):
    relaylab.install(conn)
    for n in range(3):
        _submit_with_event(conn, n)
    start = conn.execute("SELECT cq_now()").fetchone()[0]
    relay = relaylab.RelayProcess(schema, hold_after=2, now=start, lease=30).start()
    relay.wait_for("holding")
    # Holding after two sends: the events are claimed, and no transaction is open.
    assert relaylab.session(conn, relay.pid) == {"state": "idle", "xact_start": None}
    assert relay.kill() == -9
    assert len(relaylab.messages(conn)) == 2  # the broker has two events ...
    assert outbox.counts(conn)["published"] == 0  # ... that the outbox never marked
    early = relaylab.RelayProcess(schema, now=start + timedelta(seconds=29)).start()
    assert early.wait() == 0 and early.lines[-1] == "relayed count=0"  # still claimed
    second = relaylab.RelayProcess(schema, now=start + timedelta(seconds=30)).start()
    assert second.wait() == 0 and second.lines[-1] == "relayed count=3"
    assert outbox.counts(conn) == {"written": 3, "published": 3, "waiting": 0}
    seen = []
    counts = relaylab.consume(conn, lambda payload: seen.append(payload["n"]))
    assert counts == {"delivered": 5, "handled": 3, "duplicates": 2}
    assert sorted(seen) == [0, 1, 2]  # each event handled once, none lost
