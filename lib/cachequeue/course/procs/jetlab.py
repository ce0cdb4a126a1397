"""NATS JetStream as a job queue (chapter 12): a work-queue stream, a pull consumer, brokers killed.

The notebook talks to JetStream with nats-py itself (`js.add_stream`, `js.pull_subscribe`,
`msg.ack()`, `msg.in_progress()`, `msg.nak(delay=...)`); this module holds what would
otherwise be repeated in its cells:

- `name(chapter, what)`: a stream or consumer name of this chapter that two runs never share
  (CI's second leg uses a NATS service other runs use too; `CACHEQUEUE_SCHEMA_SUFFIX` is
  part of the name, as for schemas and Redis keys);
- `fresh_stream(js, name, ...)`: the stream, recreated empty, work-queue retention (an
  acknowledged message is deleted), file storage;
- `fetch_one(sub, timeout)`: the next message of a pull subscription, or None when none
  came within `timeout` seconds (JetStream did not deliver: the point of several cells);
- `kill_r1(server, jobs, processed)`: jobs published to a file-stored R1 stream of a private
  server, some processed, the server SIGKILLed and started again, then counted;
- `cluster_r3(nodes, jobs)`: an R3 stream on a three-node cluster, one node SIGKILLed in the
  middle of publishing, every job consumed; then a second node killed and a write refused.

Publishing retries with the same `Nats-Msg-Id`, so a publish whose acknowledgement was lost
(a leader killed between storing and answering) is stored once: the stream's duplicate
window drops the second copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.api import RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from ... import embedded_nats
from ...checks import check_instance, check_int, check_seconds, check_text

__all__ = ["RelayKilled", "RelayPublisher", "cluster_r3", "fetch_one", "fresh_stream", "kill_r1", "name",
           "publish"]

_NAME = re.compile(r"[A-Za-z0-9_-]+")
# What a publish meets while a stream has no leader (killed, being elected) or no quorum.
UNAVAILABLE = (nats.errors.TimeoutError, nats.errors.NoRespondersError,
               nats.js.errors.NoStreamResponseError, nats.js.errors.ServiceUnavailableError,
               nats.js.errors.APIError)


def name(chapter: str, what: str) -> str:
    """'CQ_CH12_JOBS' (with $CACHEQUEUE_SCHEMA_SUFFIX: 'CQ_CH12_TEST_JOBS'): a JetStream
    name (letters, digits, '_' and '-' only) of `chapter` that two runs never share."""
    check_text(chapter, "chapter", limit=40)
    check_text(what, "what", limit=100)
    full = "_".join(["CQ", chapter + os.environ.get("CACHEQUEUE_SCHEMA_SUFFIX", ""), what])
    if not _NAME.fullmatch(full):
        raise ValueError(f"{full!r} is not a JetStream name (letters, digits, '_' and '-')")
    return full.upper()


async def fresh_stream(js: Any, stream: str, subjects: list[str], *, replicas: int = 1,
                       duplicate_window: float = 120.0) -> Any:
    """Delete `stream` if it exists and create it again, empty: work-queue retention (a
    message leaves the stream when it is acknowledged), file storage, `replicas` copies,
    messages with a `Nats-Msg-Id` seen within `duplicate_window` seconds stored once."""
    check_int(replicas, "replicas", minimum=1, maximum=5)
    check_seconds(duplicate_window, "duplicate_window")
    config = StreamConfig(
        name=stream, subjects=subjects, retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE, num_replicas=replicas, duplicate_window=duplicate_window)

    async def create() -> Any:  # a cluster just started may time out placing the replicas
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)
        return await js.add_stream(config)

    return await _retrying(create)


async def fetch_one(sub: Any, timeout: float) -> Any | None:
    """The next message of the pull subscription `sub`, or None if JetStream delivered none
    within `timeout` seconds."""
    check_seconds(timeout, "timeout")
    try:
        (msg,) = await sub.fetch(1, timeout=timeout)
    except nats.errors.TimeoutError:
        return None
    return msg


async def publish(js: Any, subject: str, payload: bytes, msg_id: str, *,
                  deadline: float = 30.0, attempt_timeout: float = 1.0) -> tuple[Any, int]:
    """Publish with `Nats-Msg-Id: msg_id` until the stream acknowledges it, retrying the same
    id after a timeout or an unavailable stream (a leader being elected) for at most
    `deadline` seconds. Returns (the PubAck, attempts); the last error after the deadline."""
    check_seconds(deadline, "deadline")
    stop = time.monotonic() + deadline
    attempts = 0
    while True:
        attempts += 1
        try:
            ack = await js.publish(subject, payload, timeout=attempt_timeout,
                                   headers={"Nats-Msg-Id": msg_id})
            return ack, attempts
        except UNAVAILABLE:
            if time.monotonic() > stop:
                raise
            await asyncio.sleep(0.05)


async def _retrying(make: Any, deadline: float = 30.0) -> Any:
    """await make() until it succeeds or `deadline` seconds have passed (a cluster that is
    electing a leader times out meanwhile)."""
    stop = time.monotonic() + deadline
    while True:
        try:
            return await make()
        except UNAVAILABLE:
            if time.monotonic() > stop:
                raise
            await asyncio.sleep(0.1)


async def _drain(url: str, stream: str, subject: str, durable: str, *, expect: int,
                 deadline: float = 30.0) -> list[int]:
    """Consume and acknowledge the messages of `stream` until `expect` distinct jobs came
    (or `deadline` seconds passed), then whatever else comes within half a second (a
    duplicate would); their job numbers, in delivery order."""
    nc = await embedded_nats.connect(url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        js = nc.jetstream()
        sub = await _retrying(lambda: js.pull_subscribe(subject, durable=durable,
                                                        stream=stream))
        seen: list[int] = []
        stop = time.monotonic() + deadline
        while len(set(seen)) < expect and time.monotonic() < stop:
            if (msg := await fetch_one(sub, 1.0)) is not None:
                seen.append(int(msg.data))
                await _retrying(msg.ack_sync)
        while (msg := await fetch_one(sub, 0.5)) is not None:
            seen.append(int(msg.data))
            await _retrying(msg.ack_sync)
        return seen
    finally:
        await nc.close()


async def kill_r1(server: Any, *, jobs: int, processed: int) -> dict[str, int]:
    """Publish `jobs` jobs to a file-stored R1 work-queue stream of the private `server`,
    consume and acknowledge the first `processed`, SIGKILL the server, start it again, and
    consume the rest. Counts: submitted, acknowledged (PubAcks), processed, and after the
    restart delivered and lost (acknowledged, not processed, never delivered)."""
    check_instance(server, "server", embedded_nats.Server)
    check_int(jobs, "jobs", minimum=1)
    check_int(processed, "processed", minimum=0, maximum=jobs)
    stream, subject = "KILL_R1", "kill.jobs"
    nc = await embedded_nats.connect(server.url)
    try:
        js = nc.jetstream()
        await fresh_stream(js, stream, [subject])
        acks = [await js.publish(subject, str(n).encode()) for n in range(jobs)]
        sub = await js.pull_subscribe(subject, durable="workers", stream=stream)
        done = []
        while len(done) < processed:
            msgs = await sub.fetch(processed - len(done), timeout=5)
            for msg in msgs:
                await msg.ack_sync()
                done.append(int(msg.data))
    finally:
        await nc.close()
    server.stop("immediate")  # SIGKILL
    server.start()
    delivered = await _drain(server.url, stream, subject, "workers", expect=jobs - processed)
    waiting = set(range(jobs)) - set(done)
    return {"submitted": jobs, "acknowledged": len(acks), "processed": len(done),
            "delivered": len(set(delivered) & waiting),
            "lost": len(waiting - set(delivered))}


async def cluster_r3(nodes: Any, *, jobs: int, kill_after: int) -> dict[str, Any]:
    """On the three-node cluster `nodes` (`embedded_nats.cluster(3)`): an R3 work-queue
    stream; publish `jobs` jobs (each retried with its Nats-Msg-Id until acknowledged),
    SIGKILLing the stream's leader after the first `kill_after`; consume every message from
    the two survivors. Then SIGKILL a second node: a write is refused without a quorum.
    Returns the counts, the publish attempts, which node was killed, and whether the
    write without a quorum was acknowledged (it must not be)."""
    check_int(jobs, "jobs", minimum=1)
    check_int(kill_after, "kill_after", minimum=0, maximum=jobs)
    stream, subject = "KILL_R3", "r3.jobs"
    nc = await embedded_nats.connect(nodes.url, max_reconnect_attempts=-1,
                                     reconnect_time_wait=0.2)
    try:
        js = nc.jetstream()
        await fresh_stream(js, stream, [subject], replicas=3)
        acked, attempts, killed = 0, 0, None
        for n in range(jobs):
            if n == kill_after:
                leader = (await js.stream_info(stream)).cluster.leader
                killed = [node.name for node in nodes.nodes].index(leader)
                nodes.kill(killed)
            ack, tries = await publish(js, subject, str(n).encode(), f"job-{n}")
            acked += ack.stream == stream
            attempts += tries
    finally:
        await nc.close()
    survivors = [i for i in range(len(nodes.nodes)) if i != killed]
    url = ",".join(nodes.nodes[i].url for i in survivors)
    delivered = await _drain(url, stream, subject, "workers", expect=jobs)
    nodes.kill(survivors[0])  # one node left of three: no quorum
    nc = await embedded_nats.connect(nodes.nodes[survivors[1]].url)
    try:
        try:
            await nc.jetstream().publish(subject, b"-1", timeout=2.0)
            refused = False
        except UNAVAILABLE:
            refused = True
    finally:
        await nc.close()
    return {"submitted": jobs, "acknowledged": acked, "delivered": len(set(delivered)),
            "duplicates": len(delivered) - len(set(delivered)),
            "lost": len(set(range(jobs)) - set(delivered)), "publish_attempts": attempts,
            "killed": nodes.nodes[killed].name, "refused_without_quorum": refused}


class RelayPublisher:
    """The publish callable `queue.outbox.relay_once` takes, sending each event to JetStream
    with `Nats-Msg-Id` = its event id, so the stream stores a re-published event once.

    The relay is synchronous and runs in a thread (`await asyncio.to_thread(relay_once, conn,
    publisher)`); the nats-py client lives on the event loop `loop`, where each publish is
    run. `acks` keeps every PubAck (`duplicate=True` for an event the stream already had).
    `die_after=n` makes the call after the n-th publish raise, as a relay killed between
    publishing and marking: the event is in the stream, the outbox row not marked.
    """

    def __init__(self, js: Any, subject: str, loop: asyncio.AbstractEventLoop, *,
                 die_after: int | None = None) -> None:
        self.js, self.subject, self.loop = js, check_text(subject, "subject"), loop
        self.die_after = None if die_after is None else check_int(die_after, "die_after",
                                                                  minimum=1)
        self.acks: list[Any] = []

    def __call__(self, event: Any) -> None:
        data = json.dumps({"topic": event.topic, **event.payload}).encode()
        publishing = self.js.publish(self.subject, data, headers={"Nats-Msg-Id": str(event.event_id)})
        self.acks.append(asyncio.run_coroutine_threadsafe(publishing, self.loop).result(10))
        if self.die_after is not None and len(self.acks) >= self.die_after:
            raise RelayKilled(f"relay killed after publishing {len(self.acks)} event(s)")


class RelayKilled(RuntimeError):
    """Raised by a RelayPublisher with `die_after`: the relay died before marking."""
