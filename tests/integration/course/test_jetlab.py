"""JetStream as a queue (chapter 13): the lab's helpers on the course's NATS and on private servers."""

import asyncio

import pytest

from cachequeue import embedded_nats
from cachequeue.broker import names
from cachequeue.course.procs import jetlab

pytestmark = pytest.mark.nats


def test_a_fresh_stream_is_empty_and_a_missing_message_is_none(nats_url):
    async def run():
        nc = await embedded_nats.connect(nats_url)
        try:
            js = nc.jetstream()
            where = names("t_jetlab")
            await jetlab.fresh_stream(js, where.stream, [where.subjects])
            await js.publish(where.subject("x"), b"1")
            await jetlab.fresh_stream(js, where.stream, [where.subjects])  # again: emptied
            sub = await js.pull_subscribe(where.subjects, durable="t", stream=where.stream)
            got = await jetlab.fetch_one(sub, 0.2)
            state = (await js.stream_info(where.stream)).state
            await js.delete_stream(where.stream)
            return got, state.messages
        finally:
            await nc.close()

    assert asyncio.run(run()) == (None, 0)


def test_a_dying_relay_publishes_then_raises():
    seen = []
    publish = jetlab.dying(seen.append, after=2)
    publish("a")
    with pytest.raises(jetlab.RelayKilled):
        publish("b")
    assert seen == ["a", "b"]
    with pytest.raises(ValueError, match="after"):
        jetlab.dying(seen.append, after=0)
    with pytest.raises(TypeError, match="publish"):
        jetlab.dying("publish")


@pytest.mark.private_server
def test_an_r1_file_stream_keeps_its_jobs_through_a_sigkill():
    with embedded_nats.Server.private() as server:
        counts = asyncio.run(jetlab.kill_r1(server, jobs=30, processed=10))
    assert counts == {"submitted": 30, "acknowledged": 30, "processed": 10, "delivered": 20,
                      "lost": 0}
