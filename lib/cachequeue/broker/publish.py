"""Submitting jobs to a schema's JetStream stream, duplicates dropped by message id.

`submit(js, names, kind, payload, msg_id=...)` publishes one job and waits for the stream's
acknowledgement (the job is stored, or `duplicate` says the same `Nats-Msg-Id` was stored
within the stream's duplicate window and this copy was dropped). A publisher that is not
sure its first try got through (a timeout, a relay that died before marking its outbox
rows) publishes again under the same id, and the stream keeps one copy.

`Publisher` is the same for synchronous callers (a notebook cell, the outbox relay of
chapter 09): its own connection and event loop in a thread.

    with Publisher("ch13") as pub:
        pub.submit("summary", {"document_id": 7}, msg_id="doc-7-v3")
        outbox.relay_once(conn, pub.publish_event)   # msg_id = the event's event_id

The header `Cq-Submitted-At` carries the submit time (Unix seconds), for submit-to-start
latency.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from .. import embedded_nats
from ..checks import check_finite, check_int, check_seconds, check_text
from ..queue.limits import payload_json
from . import streams
from .loopthread import LoopThread

__all__ = ["SUBMITTED_AT", "Publisher", "Submitted", "submit"]

SUBMITTED_AT = "Cq-Submitted-At"


@dataclass(frozen=True)
class Submitted:
    """The stream's answer: `seq` is the message's stream sequence (the stored copy's when
    `duplicate`), `msg_id` the id it was published under."""

    stream: str
    seq: int
    duplicate: bool
    msg_id: str | None


async def submit(js, where: streams.Names, kind: str, payload: Any, *,
                 msg_id: str | None = None, timeout: float = 5.0) -> Submitted:
    """Publish one job of `kind` with `payload` (JSON) on `where`'s stream; `msg_id` (the
    Nats-Msg-Id) makes a second publish within the duplicate window a no-op."""
    if not isinstance(where, streams.Names):
        raise TypeError(f"where must be a Names (streams.names(schema)), got {type(where).__name__}")
    subject = where.subject(kind)
    body = payload_json(payload).encode()  # a dict, as the PostgreSQL queue takes
    check_text(msg_id, "msg_id", optional=True, limit=1000)
    check_seconds(timeout, "timeout")
    headers = {SUBMITTED_AT: repr(time.time())}
    if msg_id is not None:
        headers["Nats-Msg-Id"] = msg_id
    ack = await js.publish(subject, body, timeout=timeout, stream=where.stream, headers=headers)
    return Submitted(where.stream, ack.seq, bool(ack.duplicate), msg_id)


class Publisher:
    """A synchronous publisher for one schema's stream (see the module docstring): connects
    at construction (NatsUnavailable in one line if the broker cannot be reached), creates
    the stream and consumer if missing (with `ack_wait`, `max_deliver`, `replicas`,
    `duplicate_window` as `streams.ensure` takes them), `close()` disconnects."""

    def __init__(self, schema: str, *, url: str | None = None, replicas: int = 1,
                 duplicate_window: float = 120.0, ack_wait: float = 30.0,
                 max_deliver: int = 3, timeout: float = 5.0) -> None:
        self.names = streams.names(schema)
        check_int(replicas, "replicas", minimum=1, maximum=5)
        check_finite(duplicate_window, "duplicate_window", above=0)
        self.timeout = check_seconds(timeout, "timeout")
        self._loop = LoopThread("cachequeue-publisher")
        try:
            self._nc = self._loop.run(embedded_nats.connect(url, timeout=timeout))
            self._js = self._nc.jetstream(timeout=timeout)
            self._loop.run(streams.ensure(self._js, self.names, ack_wait=ack_wait,
                                          max_deliver=max_deliver, replicas=replicas,
                                          duplicate_window=duplicate_window))
        except BaseException:
            self.close()
            raise

    def submit(self, kind: str, payload: Any, *, msg_id: str | None = None) -> Submitted:
        """Publish one job (see `submit`); waits for the stream's acknowledgement."""
        return self._loop.run(submit(self._js, self.names, kind, payload, msg_id=msg_id,
                                     timeout=self.timeout), timeout=self.timeout + 5)

    def publish_event(self, event: Any) -> None:
        """The outbox relay's publish function: the event's topic is the job kind, its
        payload the payload, its event_id the Nats-Msg-Id (a re-published event is dropped)."""
        for attr in ("topic", "payload", "event_id"):
            if not hasattr(event, attr):
                raise TypeError(f"event must be an outbox.Event (it has no {attr!r})")
        self.submit(event.topic, event.payload, msg_id=str(event.event_id))

    def stream_state(self) -> dict[str, int]:
        """{'messages': stored now, 'first_seq', 'last_seq'} of the stream."""
        info = self._loop.run(self._js.stream_info(self.names.stream), timeout=self.timeout + 5)
        return {"messages": info.state.messages, "first_seq": info.state.first_seq,
                "last_seq": info.state.last_seq}

    def consumer_state(self) -> dict[str, int]:
        """The workers' consumer as JetStream counts it: 'pending' (not yet delivered),
        'ack_pending' (delivered, not acknowledged: running, or a lease running out),
        'redelivered' (among those, delivered more than once), 'delivered' (deliveries so
        far, redeliveries included)."""
        info = self._loop.run(self._js.consumer_info(self.names.stream, self.names.consumer),
                              timeout=self.timeout + 5)
        return {"pending": info.num_pending, "ack_pending": info.num_ack_pending,
                "redelivered": info.num_redelivered, "delivered": info.delivered.consumer_seq}

    def delete_stream(self) -> bool:
        """Delete the schema's stream and its consumer (a chapter's reset; a test's cleanup);
        False if there was none. The next Publisher or worker creates it again."""
        return self._loop.run(streams.delete(self._js, self.names), timeout=self.timeout + 5)

    def close(self) -> None:
        nc = getattr(self, "_nc", None)
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(Exception):  # a dead broker: nothing to keep
                self._loop.run(nc.close(), timeout=10)
        self._loop.close()

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
