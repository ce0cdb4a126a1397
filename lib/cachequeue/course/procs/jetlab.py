"""NATS JetStream as a job queue (chapter 13): a work-queue stream, a pull consumer, brokers killed.

The notebook talks to JetStream with nats-py itself (`js.add_stream`, `js.pull_subscribe`,
`msg.ack()`, `msg.in_progress()`, `msg.nak(delay=...)`); this module holds what would
otherwise be repeated in its cells:

- `fresh_stream(js, name, ...)`: the stream, recreated empty, work-queue retention (an
  acknowledged message is deleted), file storage;
- `fetch_one(sub, timeout)`: the next message of a pull subscription, or None when none
  came within `timeout` seconds (JetStream did not deliver: the point of several cells);
- `kill_r1(server, jobs, processed)`: jobs published to a file-stored R1 stream of a private
  server, some processed, the server SIGKILLed and started again, then counted;
- `cluster_r3(nodes, jobs)`: an R3 stream on a three-node cluster, one node SIGKILLed in the
  middle of publishing, every job consumed; then a second node killed and a write refused;
- `delivery_of(msg, worker)`, `heartbeats(msg, seconds)`: the fence's Delivery of a message, and
  a busy worker's `in_progress` calls;
- `wait_results(conn, stream, n)`: until a worker process has written n fenced results;
- `dying(publish)`: the outbox relay's publish function for a relay killed between
  publishing and marking.

Stream names come from `cachequeue.broker.names(schema)`, which suffixes them as schemas are
(CI's second leg shares one NATS service between runs).

Publishing retries with the same `Nats-Msg-Id`, so a publish whose acknowledgement was lost
(a leader killed between storing and answering) is stored once: the stream's duplicate
window drops the second copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.api import RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from ... import embedded_nats
from ...broker import fence
from ...checks import check_callable, check_instance, check_int, check_seconds

__all__ = ["RelayKilled", "cluster_r3", "delivery_of", "dying", "fetch_one", "fresh_stream", "heartbeats",
           "kill_r1", "publish", "wait_results"]

# What a publish meets while a stream has no leader (killed, being elected) or no quorum.
UNAVAILABLE = (nats.errors.TimeoutError, nats.errors.NoRespondersError,
               nats.js.errors.NoStreamResponseError, nats.js.errors.ServiceUnavailableError,
               nats.js.errors.APIError)


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



class RelayKilled(RuntimeError):
    """Raised by a publish function made by `dying`: the relay died before marking."""


def dying(publish: Callable[[Any], None], *, after: int = 1) -> Callable[[Any], None]:
    """`publish` (e.g. `broker.Publisher.publish_event`) for a relay that is killed once it
    has published `after` events: the call that publishes the `after`-th raises RelayKilled
    after publishing, so the event is in the stream and its outbox row not marked."""
    check_callable(publish, "publish")
    check_int(after, "after", minimum=1)
    published = []

    def publish_then_die(event: Any) -> None:
        publish(event)
        published.append(event)
        if len(published) >= after:
            raise RelayKilled(f"relay killed after publishing {len(published)} event(s)")

    return publish_then_die


def delivery_of(msg: Any, worker: str, kind: str = "summarise") -> fence.Delivery:
    """The `broker.fence.Delivery` of a fetched message: its stream, stream sequence and
    delivery count (`num_delivered`), held by `worker`."""
    meta = msg.metadata
    return fence.Delivery(meta.stream, meta.sequence.stream, meta.num_delivered, kind, worker)


async def heartbeats(msg: Any, seconds: float, *, every: float = 0.2) -> int:
    """Send `msg.in_progress()` every `every` seconds for `seconds` seconds (the heartbeat of
    a worker busy with it); how many were sent."""
    check_seconds(seconds, "seconds")
    check_seconds(every, "every")
    deadline, sent = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        await msg.in_progress()
        sent += 1
        await asyncio.sleep(every)  # the heartbeat's interval, not a wait for an event
    return sent



def wait_results(conn: Any, stream: str, count: int, *, timeout: float = 30.0) -> dict[str, int]:
    """Block until the fence tables hold `count` results of `stream` (a worker process is
    writing them), bounded by `timeout` seconds; `fence.counts` then. TimeoutError, with the
    counts, if they did not arrive in time."""
    check_int(count, "count", minimum=0)
    check_seconds(timeout, "timeout")
    deadline = time.monotonic() + timeout
    while (counts := fence.counts(conn, stream))["results"] < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{counts['results']} of {count} results within {timeout:g} s: "
                               f"{counts}")
        time.sleep(0.02)
    return counts
