"""The JetStream worker end to end: jobs from the stream, results fenced in PostgreSQL.

Every job finishes once; a re-published message id is dropped; a failed attempt is retried
with nak(delay) and the last one becomes a dead letter; a message whose leases all run out
becomes a dead letter through the max-deliveries advisory; and a redelivered message run
while its first delivery still runs gets exactly one result, the newer delivery's."""

from __future__ import annotations

import threading
import time

import pytest
from brokerhelpers import wait_for

from cachequeue import db
from cachequeue.broker import BrokerWorker, Publisher, fence, names
from cachequeue.queue.retry import RetryPolicy

pytestmark = pytest.mark.nats

FAST = RetryPolicy(max_attempts=2, base=0.05, cap=0.05, jitter="none")


def counts(schema):
    with db.connect(schema) as conn:
        return fence.counts(conn, names(schema).stream)


def test_every_job_finishes_once_and_a_republished_id_is_dropped(schema, nats_url, start_worker):
    with Publisher(schema, url=nats_url) as pub:
        sent = [pub.submit("double", {"n": n}, msg_id=f"job-{n}") for n in range(30)]
        # The consumer's count follows the stream a moment later (seen at 29 under load).
        wait_for(lambda: pub.consumer_state()["pending"] == 30, what="30 pending")
        assert pub.consumer_state() == {"pending": 30, "ack_pending": 0, "redelivered": 0,
                                        "delivered": 0}
        again = pub.submit("double", {"n": 0}, msg_id="job-0")  # e.g. a relay retrying
        assert again.duplicate and again.seq == sent[0].seq
        assert not any(s.duplicate for s in sent)
        running = start_worker({"double": lambda p: {"twice": 2 * p["n"]}}, url=nats_url,
                               concurrency=4)
        wait_for(lambda: counts(schema)["results"] == 30, what="30 results")
        stats = running.close()
        assert pub.stream_state()["messages"] == 0  # acknowledged: gone from the stream
        assert pub.consumer_state() == {"pending": 0, "ack_pending": 0, "redelivered": 0,
                                        "delivered": 30}
    assert stats["finished"] == 30 and stats["stale"] == 0 and stats["dead"] == 0
    with db.connect(schema) as conn:
        rows = fence.results(conn, names(schema).stream)
    assert sorted(r["result"]["twice"] for r in rows) == [2 * n for n in range(30)]
    assert {r["msg_id"] for r in rows} == {f"job-{n}" for n in range(30)}


def test_a_failed_attempt_is_retried_and_the_last_one_is_a_dead_letter(schema, nats_url,
                                                                        start_worker):
    calls: dict[int, int] = {}

    def flaky(payload, ctx):
        calls[payload["n"]] = calls.get(payload["n"], 0) + 1
        if payload["n"] == 1 or ctx.delivery.delivery == 1:
            raise RuntimeError(f"attempt {ctx.delivery.delivery} failed")
        return {"delivery": ctx.delivery.delivery}

    with Publisher(schema, url=nats_url, max_deliver=FAST.max_attempts) as pub:
        pub.submit("flaky", {"n": 0})
        pub.submit("flaky", {"n": 1})  # fails every time
        running = start_worker({"flaky": flaky}, url=nats_url, retry=FAST)
        wait_for(lambda: counts(schema)["results"] + counts(schema)["dead_letters"] == 2,
                 what="one result, one dead letter")
        stats = running.close()
        assert pub.stream_state()["messages"] == 0
    assert calls == {0: 2, 1: 2} and stats["retried"] == 2 and stats["dead"] == 1
    with db.connect(schema) as conn:
        (result,) = fence.results(conn, names(schema).stream)
        (dead,) = fence.dead_letters(conn, names(schema).stream)
    assert result["result"] == {"delivery": 2}
    assert (dead["reason"], dead["deliveries"], dead["payload"]) == ("failed", 2, {"n": 1})
    assert "attempt 2 failed" in dead["error"]


def test_a_redelivery_while_the_first_delivery_runs_gives_one_result(schema, nats_url,
                                                                     start_worker):
    """No lease token in JetStream: the fence in PostgreSQL refuses the stale delivery."""
    first_running, release_first = threading.Event(), threading.Event()
    ran: list[int] = []

    def slow_first(payload, ctx):
        ran.append(ctx.delivery.delivery)
        if ctx.delivery.delivery == 1:
            first_running.set()
            assert release_first.wait(30)
        return {"by": ctx.worker, "delivery": ctx.delivery.delivery}

    with Publisher(schema, url=nats_url, ack_wait=1.0) as pub:
        pub.submit("job", {"n": 1})
        # heartbeat 0: the first delivery's lease (ack_wait 1 s) runs out while it runs.
        a = start_worker({"job": slow_first}, url=nats_url, name="a", lease=1.0, heartbeat=0)
        assert first_running.wait(30)
        b = start_worker({"job": slow_first}, url=nats_url, name="b", lease=1.0, heartbeat=0)
        wait_for(lambda: counts(schema)["results"] == 1, what="delivery 2's result")
        release_first.set()  # the first delivery now finishes and tries to write
        wait_for(lambda: a.stats["stale"] == 1, what="delivery 1's write refused")
        assert pub.consumer_state()["delivered"] == 2  # one message, delivered twice
        stats_a, stats_b = a.close(), b.close()
        assert pub.stream_state()["messages"] == 0
    assert ran == [1, 2]
    assert (stats_a["finished"], stats_a["stale"], stats_b["finished"]) == (0, 1, 1)
    with db.connect(schema) as conn:
        (row,) = fence.results(conn, names(schema).stream)
    assert row["result"] == {"by": "b", "delivery": 2} and row["delivery"] == 2


def test_leases_that_all_run_out_make_a_dead_letter_by_the_advisory(schema, nats_url,
                                                                    start_worker):
    release = threading.Event()
    ran: list[int] = []

    def stuck(payload, ctx):
        ran.append(ctx.delivery.delivery)
        release.wait(30)
        return "too late"

    with Publisher(schema, url=nats_url, ack_wait=0.5, max_deliver=2) as pub:
        pub.submit("stuck", {"n": 1})
        running = start_worker({"stuck": stuck}, url=nats_url, lease=0.5, heartbeat=0,
                               concurrency=3, retry=RetryPolicy(max_attempts=2))
        wait_for(lambda: counts(schema)["dead_letters"] == 1, what="the advisory's dead letter")
        release.set()
        wait_for(lambda: running.stats["stale"] == 2, what="both late writes refused")
        stats = running.close()
        assert pub.stream_state()["messages"] == 0  # removed from the stream
    assert ran == [1, 2] and stats["finished"] == 0 and stats["dead"] == 1
    with db.connect(schema) as conn:
        (dead,) = fence.dead_letters(conn, names(schema).stream)
        assert fence.results(conn, names(schema).stream) == []
    assert (dead["reason"], dead["deliveries"], dead["payload"]) == ("max_deliveries", 2, {"n": 1})


def test_the_fence_by_hand(conn):
    fence.install(conn)
    one = fence.Delivery("S", 7, 1, "k", "a", "id-7")
    two = fence.Delivery("S", 7, 2, "k", "b", "id-7")
    assert fence.begin(conn, one) == "run"
    assert fence.begin(conn, two) == "run"
    assert fence.begin(conn, one) == "stale"  # an older delivery arriving late
    assert fence.record(conn, one, {"from": 1}) is False  # refused: not the newest
    assert fence.record(conn, two, {"from": 2}) is True
    assert fence.record(conn, two, {"from": 2}) is False  # once
    assert fence.begin(conn, fence.Delivery("S", 7, 3, "k", "c")) == "done"  # ack lost: ack again
    assert fence.dead_letter(conn, two, reason="failed") is False  # a result is in
    assert fence.counts(conn, "S") == {"results": 1, "dead_letters": 0, "messages": 1,
                                       "deliveries": 2}
    with pytest.raises(ValueError, match="reason must be one of"):
        fence.dead_letter(conn, two, reason="lost")
    with pytest.raises(TypeError, match="delivery must be a Delivery"):
        fence.begin(conn, (7, 1))


def test_a_stopping_worker_hands_a_running_job_back_to_another(schema, nats_url, start_worker):
    started, release = threading.Event(), threading.Event()

    def slow(payload, ctx):
        if ctx.worker == "a":
            started.set()
            release.wait(30)  # not cooperative: the worker hands it back regardless
        return {"by": ctx.worker}

    with Publisher(schema, url=nats_url) as pub:
        pub.submit("slow", {"n": 1})
        a = start_worker({"slow": slow}, url=nats_url, name="a", shutdown_timeout=0.2)
        assert started.wait(30)
        stats_a = a.close()
        assert stats_a["released"] == 1 and stats_a["finished"] == 0
        b = start_worker({"slow": slow}, url=nats_url, name="b")
        wait_for(lambda: counts(schema)["results"] == 1, what="b finishes the handed-back job")
        release.set()
        assert b.close()["finished"] == 1
        assert pub.stream_state()["messages"] == 0
    with db.connect(schema) as conn:
        (row,) = fence.results(conn, names(schema).stream)
    assert row["result"] == {"by": "b"} and row["delivery"] == 2


def test_heartbeats_keep_a_job_longer_than_its_lease_from_being_redelivered(schema, nats_url,
                                                                             start_worker):
    """in_progress() every 0.3 s renews a 1 s ack_wait: a 2.5 s job is delivered once, even
    with a second, idle worker ready to take a redelivery."""
    ran: list[tuple[str, int]] = []

    def long_job(payload, ctx):
        ran.append((ctx.worker, ctx.delivery.delivery))
        time.sleep(2.5)
        return "done"

    with Publisher(schema, url=nats_url, ack_wait=1.0) as pub:
        a = start_worker({"long": long_job}, url=nats_url, name="a", lease=1.0, heartbeat=0.3)
        b = start_worker({"long": long_job}, url=nats_url, name="b", lease=1.0, heartbeat=0.3)
        pub.submit("long", {"n": 1})
        wait_for(lambda: counts(schema)["results"] == 1, what="the long job's result")
        stats = [a.close(), b.close()]
    assert len(ran) == 1 and ran[0][1] == 1  # one delivery, never a second
    assert sum(s["finished"] for s in stats) == 1 and sum(s["stale"] for s in stats) == 0


@pytest.mark.private_server  # reaches no server at all
def test_start_raises_the_start_up_error_and_close_needs_start():
    from cachequeue import embedded_nats
    from cachequeue.broker import BrokerWorker
    from cachequeue.errors import NatsUnavailable

    port = embedded_nats.free_ports(1)[0]
    worker = BrokerWorker("s", {"k": print}, url=f"nats://127.0.0.1:{port}")
    with pytest.raises(RuntimeError, match="was not started with start"):
        worker.close()
    with pytest.raises(NatsUnavailable, match=f"cannot reach NATS at nats://127.0.0.1:{port}"):
        worker.start()
    assert not worker.alive
    with pytest.raises(RuntimeError, match="was started already"):
        worker.start()


def test_the_default_connection_uses_the_schema_with_its_suffix_once(schema, monkeypatch):
    """Without connect_db the worker connects to db.connect(schema): the suffix that
    CACHEQUEUE_SCHEMA_SUFFIX adds (as names() does for the stream) is added once, not twice."""
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "_once")
    worker = BrokerWorker(schema, {"noop": lambda p: p})
    with worker.connect_db() as conn:
        found = conn.execute("SELECT current_schema()").fetchone()[0]
        conn.execute(f'DROP SCHEMA "{found}" CASCADE')
    assert found == names(schema).schema == db.schema_name(schema) == schema + "_once"


def test_a_full_house_leaves_no_waiter_behind(schema, nats_url, start_worker):
    """At concurrency 1 every fetch fills the house, and the loop waits for a job or the
    stop: after 30 jobs the worker's loop holds as many tasks as before them, not one more
    per job (a waiter made anew for each wait was left pending when a job ended it)."""
    import asyncio

    async def tasks() -> int:
        return len(asyncio.all_tasks())

    with Publisher(schema, url=nats_url) as pub:
        running = start_worker({"double": lambda p: {"twice": 2 * p["n"]}}, url=nats_url,
                               concurrency=1)
        before = asyncio.run_coroutine_threadsafe(tasks(), running._loop).result(10)
        for n in range(30):
            pub.submit("double", {"n": n}, msg_id=f"job-{n}")
        wait_for(lambda: counts(schema)["results"] == 30, what="30 results")
        after = asyncio.run_coroutine_threadsafe(tasks(), running._loop).result(10)
        running.close()
    assert after - before <= 2, f"{before} tasks in the worker's loop before 30 jobs, {after} after"


def test_every_poison_message_ends_as_a_dead_letter_at_once(schema, nats_url, start_worker):
    """Bodies that cannot be parsed (deep nesting: a RecursionError; not JSON; not UTF-8; a
    5,000-digit number) are dead letters on their first delivery, and a Nats-Msg-Id over
    1,000 characters (the fence refuses it) is one too: none stays in the stream. A good
    job after each still runs."""
    poison = {"deep": b"[" * 100_000 + b"]" * 100_000, "text": b"not json",
              "latin1": b'{"a": "\xff"}', "digits": b"1" * 5000}
    with Publisher(schema, url=nats_url, max_deliver=3) as pub:
        subject = names(schema).subject("double")
        for n, body in enumerate(poison.values()):
            pub._loop.run(pub._js.publish(subject, body, stream=names(schema).stream))
            pub.submit("double", {"n": n})
        pub._loop.run(pub._js.publish(subject, b'{"n": 99}', stream=names(schema).stream,
                                      headers={"Nats-Msg-Id": "x" * 2000}))
        running = start_worker({"double": lambda p: {"twice": 2 * p["n"]}}, url=nats_url,
                               retry=RetryPolicy(max_attempts=3, base=5, cap=5, jitter="none"))
        wait_for(lambda: counts(schema)["dead_letters"] == 5 and counts(schema)["results"] == 4,
                 what="five dead letters and four results")
        stats = running.close()
        wait_for(lambda: pub.stream_state()["messages"] == 0, what="an empty stream")
    assert stats["dead"] == 5 and stats["retried"] == 0 and stats["finished"] == 4
    with db.connect(schema) as conn:
        dead = fence.dead_letters(conn, names(schema).stream)
    assert [d["deliveries"] for d in dead] == [1] * 5  # at once, not after max_deliver
    assert all(d["reason"] == "failed" for d in dead)
    assert [d["payload"] for d in dead[:4]] == [None] * 4
    assert dead[4]["payload"] == {"n": 99} and dead[4]["msg_id"] is None
    assert "msg_id must be at most 1000" in dead[4]["error"]
    assert "not JSON" in dead[0]["error"] and "not JSON" in dead[1]["error"]
