"""The stream, subjects and consumer that carry one schema's jobs on JetStream.

A schema `s` (after CACHEQUEUE_SCHEMA_SUFFIX, as `db.schema_name` gives it) has one stream
`CQ_s` on the subjects `cq.s.jobs.<kind>`, file storage, work-queue retention (a message
leaves the stream when it is acknowledged: the stream is the backlog, not the history), a
duplicate window for `Nats-Msg-Id`, and one durable pull consumer `workers` with explicit
acks: `ack_wait` is the lease, `max_deliver` the attempt cap.

    names = streams.names("ch13")            # Names(stream='CQ_ch13', ...)
    await streams.ensure(js, names, ack_wait=30, max_deliver=3, replicas=1)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import NotFoundError

from .. import db
from ..checks import check_finite, check_int, check_seconds

__all__ = ["CONSUMER", "Names", "delete", "ensure", "names"]

CONSUMER = "workers"
_KIND = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


@dataclass(frozen=True)
class Names:
    """Where one schema's jobs live on the broker."""

    schema: str
    stream: str
    prefix: str  # subjects are prefix + "." + kind
    consumer: str = CONSUMER

    @property
    def subjects(self) -> str:
        return f"{self.prefix}.*"

    def subject(self, kind: str) -> str:
        """The subject a job of `kind` is published on (kind: letters, digits, _ or -)."""
        if not isinstance(kind, str) or not _KIND.match(kind):
            raise ValueError(f"kind must be 1-100 letters, digits, '_' or '-' (a subject "
                             f"token), got {kind!r}")
        return f"{self.prefix}.{kind}"

    def kind_of(self, subject: str) -> str:
        return subject.removeprefix(self.prefix + ".")

    @property
    def advisory(self) -> str:
        """The subject of JetStream's max-deliveries advisory for this consumer."""
        return f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{self.stream}.{self.consumer}"


def names(schema: str) -> Names:
    """The stream and subjects of `schema` (checked and suffixed as db.connect does)."""
    name = db.schema_name(schema)
    return Names(schema=name, stream=f"CQ_{name}", prefix=f"cq.{name}.jobs")


async def ensure(js, where: Names, *, ack_wait: float = 30.0, max_deliver: int = 3,
                 replicas: int = 1, duplicate_window: float = 120.0,
                 max_ack_pending: int = 10_000) -> None:
    """Create the stream and the consumer unless they exist; an existing consumer gets the
    given ack_wait and max_deliver (JetStream updates them in place)."""
    if not isinstance(where, Names):
        raise TypeError(f"where must be a Names (streams.names(schema)), got {type(where).__name__}")
    check_seconds(ack_wait, "ack_wait")
    check_int(max_deliver, "max_deliver", minimum=1)
    check_int(replicas, "replicas", minimum=1, maximum=5)
    check_finite(duplicate_window, "duplicate_window", above=0)
    check_int(max_ack_pending, "max_ack_pending", minimum=1)
    try:
        await js.stream_info(where.stream)
    except NotFoundError:
        await js.add_stream(StreamConfig(
            name=where.stream, subjects=[where.subjects], retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE, num_replicas=replicas, discard=DiscardPolicy.NEW,
            duplicate_window=duplicate_window))
    await js.add_consumer(where.stream, ConsumerConfig(
        durable_name=where.consumer, ack_policy=AckPolicy.EXPLICIT, ack_wait=ack_wait,
        max_deliver=max_deliver, filter_subject=where.subjects, max_ack_pending=max_ack_pending))


async def delete(js, where: Names) -> bool:
    """Delete the stream (its messages and its consumer); False if there was none."""
    if not isinstance(where, Names):
        raise TypeError(f"where must be a Names (streams.names(schema)), got {type(where).__name__}")
    try:
        return bool(await js.delete_stream(where.stream))
    except NotFoundError:
        return False
