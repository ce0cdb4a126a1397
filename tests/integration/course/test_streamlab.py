"""Redis Streams as a queue (chapter 13): the commands behind StreamQueue, and the kill run."""

import pytest

from cachequeue import embedded_redis
from cachequeue.course.procs import streamlab


def test_a_lease_runs_out_only_past_the_idle_time_and_a_heartbeat_resets_it(keyspace):
    client, prefix = keyspace
    q = streamlab.StreamQueue(client, prefix + "jobs")
    stuck, fresh = (q.submit(n=str(n)) for n in range(2))
    assert [d.id for d in q.take("a", 2)] == [stuck, fresh]
    q.age(stuck, 600)
    q.age(fresh, 600)
    assert q.heartbeat("a", fresh)
    taken = q.reclaim("b", lease=300)
    assert [(d.id, d.consumer, d.deliveries) for d in taken] == [(stuck, "b", 2)]
    assert q.pending(fresh)[0]["consumer"] == "a" and q.deliveries(fresh) == 1


def test_any_client_may_acknowledge_and_a_dead_letter_acknowledges(keyspace):
    client, prefix = keyspace
    q = streamlab.StreamQueue(client, prefix + "jobs")
    job = q.submit(n="1")
    (first,) = q.take("a")
    q.age(job, 600)
    q.reclaim("b", lease=300)
    assert q.ack(first.id) == 1 and q.pending() == []  # a's ack removed b's delivery
    poison = q.submit(n="2")
    (delivery,) = q.take("a")
    dead = q.dead_letter(delivery, "too many")
    assert q.deliveries(poison) == 0
    assert client.xrange(q.dead) == [(dead, {"n": "2", "source_id": poison, "deliveries": "1",
                                             "reason": "too many"})]


def test_bad_arguments_are_refused(keyspace):
    client, prefix = keyspace
    q = streamlab.StreamQueue(client, prefix + "jobs")
    with pytest.raises(ValueError, match="payload"):
        q.submit()
    with pytest.raises(ValueError, match="count"):
        q.take("a", 0)
    with pytest.raises(ValueError, match="not pending"):
        q.age("1-0", 1)
    with pytest.raises(TypeError, match="client"):
        streamlab.StreamQueue("redis://", "jobs")
    with pytest.raises(ValueError, match="appendfsync"):
        embedded_redis.Server.private(appendfsync="no")


def test_a_heartbeat_of_a_consumer_that_lost_its_entry_is_refused_and_takes_nothing(keyspace):
    client, prefix = keyspace
    q = streamlab.StreamQueue(client, prefix + "jobs")
    job = q.submit(n="1")
    q.take("a")
    q.age(job, 600)
    (taken,) = q.reclaim("b", lease=300)   # b took the entry over
    assert taken.consumer == "b"
    assert q.heartbeat("a", job) is False  # a lost it: told so
    assert q.pending(job)[0]["consumer"] == "b"  # and b still holds it
    assert q.heartbeat("b", job) is True
    q.ack(job)
    assert q.heartbeat("b", job) is False  # acknowledged: nobody holds it
    with pytest.raises(ValueError, match="stream id"):
        q.heartbeat("b", "not-an-id")


def test_an_entry_that_is_not_utf8_is_dead_lettered_and_the_rest_of_the_batch_is_taken(keyspace):
    client, prefix = keyspace
    q = streamlab.StreamQueue(client, prefix + "jobs")
    good = q.submit(n="1")
    bad = client.xadd(q.stream, {"n": b"\xff\xfe"})
    later = q.submit(n="3")
    assert [d.id for d in q.take("a", 10)] == [good, later]
    assert [p["message_id"] for p in q.pending()] == [good, later]  # the poison is not held
    (dead,) = client.execute_command("XRANGE", q.dead, "-", "+", NEVER_DECODE=True)
    assert dead[1] == {b"n": b"\xff\xfe", b"source_id": bad.encode(), b"deliveries": b"1",
                       b"reason": b"a field is not UTF-8"}  # its bytes kept


def test_a_reclaimed_entry_that_is_not_utf8_is_dead_lettered(keyspace):
    client, prefix = keyspace
    q = streamlab.StreamQueue(client, prefix + "jobs")
    bad = client.xadd(q.stream, {"n": b"\xff"})
    good = q.submit(n="2")
    # Held by a consumer that read them without decoding (as a worker in another language).
    client.execute_command("XREADGROUP", "GROUP", q.group, "a", "COUNT", 10, "STREAMS",
                           q.stream, ">", NEVER_DECODE=True)
    q.age(bad, 600)
    q.age(good, 600)
    assert [(d.id, d.consumer, d.deliveries) for d in q.reclaim("b", lease=300)] == [(good, "b", 2)]
    dead = client.execute_command("XRANGE", q.dead, "-", "+", NEVER_DECODE=True)
    assert [f[b"source_id"] for _, f in dead] == [bad.encode()]
    assert [p["message_id"] for p in q.pending()] == [good]


def test_a_dead_letter_keeps_payload_fields_named_like_its_metadata(keyspace):
    client, prefix = keyspace
    q = streamlab.StreamQueue(client, prefix + "jobs")
    job = q.submit(reason="customer asked", source_id="crm-7", deliveries="by post",
                   **{"payload:x": "y", "n": "1"})
    (delivery,) = q.take("a")
    q.dead_letter(delivery, "too many")
    ((_, fields),) = client.xrange(q.dead)
    assert fields == {"payload:reason": "customer asked", "payload:source_id": "crm-7",
                      "payload:deliveries": "by post", "payload:payload:x": "y", "n": "1",
                      "source_id": job, "deliveries": "1", "reason": "too many"}


@pytest.mark.private_server
def test_a_sigkill_loses_the_unprocessed_jobs_without_persistence_and_none_with_aof():
    with embedded_redis.Server.private() as server:
        bare = streamlab.kill_run(server, jobs=40, processed=10)
    with embedded_redis.Server.private(appendfsync="always") as server:
        kept = streamlab.kill_run(server, jobs=40, processed=10)
    assert bare == {"submitted": 40, "acknowledged": 40, "processed": 10, "remaining": 0,
                    "lost": 30}
    assert kept == {"submitted": 40, "acknowledged": 40, "processed": 10, "remaining": 30,
                    "lost": 0}
