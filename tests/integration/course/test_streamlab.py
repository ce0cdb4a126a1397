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
