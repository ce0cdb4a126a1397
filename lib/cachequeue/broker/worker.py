"""A worker that takes its jobs from JetStream and writes results to PostgreSQL, fenced.

The queue's ideas, mapped onto JetStream (one durable pull consumer per schema, explicit
acks; see `streams`):

    lease            ack_wait: an unacknowledged delivery is delivered again after it
    heartbeat        msg.in_progress() every `heartbeat` seconds while the handler runs
    attempt cap      max_deliver (= retry.max_attempts): deliveries, lease expiries included
    retry + backoff  msg.nak(delay=retry.delay(attempt)): the course's RetryPolicy
    dead letter      the last attempt failed: a dead-letter row, then msg.term();
                     JetStream gave up (max-deliveries advisory): a dead-letter row, and
                     the message is deleted from the stream
    lease token      none in JetStream: `fence` registers each delivery and accepts a
                     result only from the newest one, once

Order per message: register the delivery (`fence.begin`: 'done' means a result is in
already, so only the ack was missing: ack it again, do not run), run the handler in a
thread (heartbeats meanwhile), record the result (`fence.record`; refused when a newer
delivery began: that one will finish it), then ack and wait for the server's confirmation.
A crash anywhere leaves the message unacknowledged: it comes back after ack_wait, and the
fence keeps the result single.

A lost broker: nats-py reconnects (forever, `reconnect_wait` apart) and the fetch loop backs
off (doubling up to 5 s) until fetches answer again; nothing is acknowledged that was not
recorded, and a result recorded but not acknowledged is acknowledged on its redelivery.

    worker = BrokerWorker("ch13", {"summary": summarise}, concurrency=4, lease=30)
    stats = worker.run()          # blocks until worker.stop() (thread- and signal-safe)
    worker.start(); ...; stats = worker.close()   # in a thread of its own (notebooks)

Handlers are the queue's: handler(payload) or handler(payload, ctx) with a
`BrokerContext` (the delivery; `should_stop()`, `wait(s)`). One log line per event through
`cachequeue.worker` (queue.logline): starting, ready, started, finished, retrying, failed,
dead, stale, redone, reconnecting, reconnected, handed-back, stopping, stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import nats.errors
import nats.js.errors
import psycopg
from psycopg import sql

from .. import db, embedded_nats
from ..checks import check_callable, check_instance, check_int, check_seconds, check_text
from ..errors import InvalidJob
from ..queue.context import takes_context
from ..queue.logline import LOGGER, log_line, one_line
from ..queue.retry import RetryPolicy
from . import fence, streams
from .publish import SUBMITTED_AT

__all__ = ["BrokerContext", "BrokerWorker"]

RECONNECT_CAP = 5.0  # seconds: the longest pause between fetches while the broker is gone


class BrokerContext:
    """What a running handler may know: `delivery` (a fence.Delivery: stream, seq, delivery
    count, kind, msg_id), the worker's `name`, and whether it should stop."""

    def __init__(self, delivery: fence.Delivery, worker: str) -> None:
        self.delivery = delivery
        self.worker = worker
        self._stop = threading.Event()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if woken early to stop."""
        return self._stop.wait(check_seconds(seconds, "seconds", allow_zero=True))

    def halt(self) -> None:
        self._stop.set()


class BrokerWorker:
    """Run one schema's jobs from JetStream (see the module docstring).

    `url`: the broker (default NATS_URL, else the embedded server); `connect_db`: a
    function returning an autocommit connection whose search_path holds the fence tables
    (default `db.connect(schema)`). `lease` is ack_wait; `heartbeat` defaults to lease/3
    (0 = never, for demonstrations; else less than lease/2); `retry` the backoff and the
    attempt cap (max_deliver); `poll` the longest wait of one fetch; `shutdown_timeout`
    how long running jobs may take after stop() before they are handed back (nak);
    `replicas` the stream's replication factor when this worker creates it.
    """

    def __init__(self, schema: str, handlers: Mapping[str, Callable[..., Any]], *,
                 url: str | None = None, connect_db: Callable[[], psycopg.Connection] | None = None,
                 name: str | None = None, concurrency: int = 1, lease: float = 30.0,
                 heartbeat: float | None = None, retry: RetryPolicy | None = None,
                 poll: float = 1.0, shutdown_timeout: float = 30.0, replicas: int = 1,
                 reconnect_wait: float = 0.5) -> None:
        self.names = streams.names(schema)
        self.schema = schema  # as given: db.connect adds CACHEQUEUE_SCHEMA_SUFFIX itself
        if not isinstance(handlers, Mapping) or not handlers:
            raise TypeError("handlers must be a non-empty mapping {kind: callable}")
        for kind, handler in handlers.items():
            self.names.subject(kind)
            check_callable(handler, f"handlers[{kind!r}]")
        self.handlers = dict(handlers)
        self.url = url
        self.connect_db = connect_db if connect_db is not None else self._connect_schema
        check_callable(self.connect_db, "connect_db")
        self.name = check_text(name, "name", optional=True) or f"{socket.gethostname()}-{os.getpid()}"
        self.concurrency = check_int(concurrency, "concurrency", minimum=1, maximum=256)
        self.lease = check_seconds(lease, "lease", upper=3600)
        if heartbeat is None:
            heartbeat = self.lease / 3
        self.heartbeat = check_seconds(heartbeat, "heartbeat", allow_zero=True)
        if self.heartbeat and self.heartbeat >= self.lease / 2:
            raise ValueError(f"heartbeat must be < lease/2 ({self.lease / 2:g}) or 0, "
                             f"got {heartbeat!r}")
        self.retry = check_instance(retry if retry is not None else RetryPolicy(), "retry",
                                    RetryPolicy)
        self.poll = check_seconds(poll, "poll", upper=60)
        self.shutdown_timeout = check_seconds(shutdown_timeout, "shutdown_timeout",
                                              allow_zero=True)
        self.replicas = check_int(replicas, "replicas", minimum=1, maximum=5)
        self.reconnect_wait = check_seconds(reconnect_wait, "reconnect_wait")
        self.stats = {k: 0 for k in ("finished", "retried", "dead", "stale", "redone",
                                     "released", "reconnects")}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = False
        self._now = False
        self._local = threading.local()
        self._connections: list[psycopg.Connection] = []
        self._contexts: set[BrokerContext] = set()
        self._inflight: dict[int, tuple[Any, fence.Delivery]] = {}
        self.ready = threading.Event()  # set once the worker fetches (tests, supervisors)

    # ------------------------------------------------------------------ control

    def _connect_schema(self) -> psycopg.Connection:
        """db.connect(schema), the schema created if it is missing (its tables: install)."""
        conn = db.connect(self.schema)
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
            sql.Identifier(self.names.schema)))
        return conn

    @property
    def stopping(self) -> bool:
        return self._stop_requested

    def stop(self) -> None:
        """Stop fetching; running jobs get shutdown_timeout seconds. Safe from any thread
        and from a signal handler."""
        self._stop_requested = True
        loop, event = self._loop, self._stopping
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # the loop has just closed
                loop.call_soon_threadsafe(event.set)

    def stop_now(self) -> None:
        """Stop and hand the running jobs back at once (nak; another worker takes them)."""
        self._now = True
        self.stop()

    def run(self) -> dict[str, int]:
        """Run until stop(); the counts of what happened. NatsUnavailable (one line) if the
        broker cannot be reached at start-up."""
        return asyncio.run(self.run_async())

    def start(self, timeout: float = 30.0) -> BrokerWorker:
        """Run in a thread of its own (a notebook cell, whose thread already has an event
        loop, cannot call run()); return once it fetches, or raise its start-up error
        (NatsUnavailable...). `close()` stops it and returns the counts."""
        check_seconds(timeout, "timeout")
        if getattr(self, "_thread", None) is not None:
            raise RuntimeError(f"worker {self.name} was started already")
        self._outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                self._outcome["stats"] = self.run()
            except BaseException as exc:  # handed to start() or close()
                self._outcome["error"] = exc

        self._thread = threading.Thread(target=target, name=f"broker-worker-{self.name}",
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.02):
            if "error" in self._outcome:
                raise self._outcome["error"]
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"worker {self.name} not ready within {timeout:g} s")
        return self

    def close(self, timeout: float = 60.0) -> dict[str, int]:
        """Stop a worker started with start(), wait for its thread; its counts."""
        check_seconds(timeout, "timeout")
        thread = getattr(self, "_thread", None)
        if thread is None:
            raise RuntimeError(f"worker {self.name} was not started with start()")
        self.stop()
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"worker {self.name} did not stop within {timeout:g} s")
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome["stats"]

    @property
    def alive(self) -> bool:
        """Whether a worker started with start() still runs."""
        thread = getattr(self, "_thread", None)
        return thread is not None and thread.is_alive()

    # ------------------------------------------------------------------ the loop

    def _log(self, event: str, **fields: Any) -> None:
        LOGGER.info(log_line(self.name, event, **fields))

    def _db(self) -> psycopg.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self.connect_db()
            self._local.conn = conn
            self._connections.append(conn)
        return conn

    async def _in_db(self, fn: Callable[..., Any], *args: Any) -> Any:
        def call():
            try:
                return fn(self._db(), *args)
            except psycopg.OperationalError:  # a dropped connection: one fresh try
                self._local.conn = None
                return fn(self._db(), *args)
        return await self._loop.run_in_executor(self._db_pool, call)

    async def run_async(self) -> dict[str, int]:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_requested:
            self._stopping.set()
        # The broker first: one that cannot be reached is NatsUnavailable, and nothing else
        # was started or logged.
        nc = await embedded_nats.connect(
            self.url, name=self.name, max_reconnect_attempts=-1,
            reconnect_time_wait=self.reconnect_wait,
            disconnected_cb=self._disconnected, reconnected_cb=self._reconnected)
        self._log("starting", stream=self.names.stream, concurrency=self.concurrency,
                  lease=self.lease)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="broker-job")
        self._db_pool = ThreadPoolExecutor(min(self.concurrency + 1, 8),
                                           thread_name_prefix="broker-db")
        try:
            await self._in_db(fence.install)
            js = nc.jetstream(timeout=5)
            await streams.ensure(js, self.names, ack_wait=self.lease,
                                 max_deliver=self.retry.max_attempts, replicas=self.replicas)

            async def on_advisory(msg) -> None:
                await self._advisory(js, msg)

            await nc.subscribe(self.names.advisory, queue="advisories", cb=on_advisory)
            sub = await js.pull_subscribe_bind(self.names.consumer, stream=self.names.stream)
            await self._fetch_loop(sub)
        finally:
            for ctx in list(self._contexts):
                ctx.halt()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(nc.close(), 5)
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._db_pool.shutdown(wait=True)
            for conn in self._connections:
                with contextlib.suppress(Exception):
                    conn.close()
            self._log("stopped", **self.stats)
        return dict(self.stats)

    async def _disconnected(self) -> None:
        if not self._stop_requested:
            self._log("reconnecting", url=self.url or "default")

    async def _reconnected(self) -> None:
        self.stats["reconnects"] += 1
        self._log("reconnected")

    async def _fetch_loop(self, sub) -> None:
        running: set[asyncio.Task] = set()
        pause = 0.0
        # One waiter for the stop, made once: a new one per full house would be left pending
        # each time a job, not the stop, ended the wait (a task per job, kept until the end).
        stop = asyncio.ensure_future(self._stopping.wait())
        self._log("ready")
        self.ready.set()
        while not self._stopping.is_set():
            free = self.concurrency - len(running)
            if free == 0:
                done, _ = await asyncio.wait(running | {stop}, return_when=asyncio.FIRST_COMPLETED)
                running -= done
                continue
            try:
                msgs = await sub.fetch(batch=free, timeout=self.poll)
                pause = 0.0
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            except (nats.errors.Error, nats.js.errors.Error, OSError) as exc:
                # The broker is gone (or restarting): back off, nats-py reconnects meanwhile.
                pause = min(RECONNECT_CAP, max(0.1, pause * 2))
                self._log("fetch-failed", error=one_line(exc), pause=pause)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), pause)
                continue
            for msg in msgs:
                task = asyncio.ensure_future(self._process(msg))
                running.add(task)
                task.add_done_callback(running.discard)
        stop.cancel()
        self._log("stopping", running=len(running))
        deadline = time.monotonic() + self.shutdown_timeout
        while running and not self._now and time.monotonic() < deadline:
            await asyncio.wait(set(running), timeout=min(0.1, self.shutdown_timeout))
        pending = set(running)
        if pending or self._inflight:
            for ctx in list(self._contexts):
                ctx.halt()
            # Still running: hand them back (nak without delay, another worker takes them);
            # whatever the abandoned threads finish later is never recorded.
            for task in pending:
                task.cancel()
            for msg, delivery in list(self._inflight.values()):
                self.stats["released"] += 1
                self._log("handed-back", seq=delivery.seq)
                with contextlib.suppress(Exception):
                    await msg.nak()

    # ------------------------------------------------------------------ one message

    def _delivery(self, msg) -> fence.Delivery:
        meta = msg.metadata
        kind, msg_id = self.names.kind_of(msg.subject), (msg.headers or {}).get("Nats-Msg-Id")
        if "\x00" in kind or "\x00" in (msg_id or ""):  # PostgreSQL text cannot hold it
            raise ValueError("a NUL character in the subject or the Nats-Msg-Id")
        return fence.Delivery(stream=self.names.stream, seq=meta.sequence.stream,
                              delivery=meta.num_delivered, kind=kind, worker=self.name,
                              msg_id=msg_id)

    def _stand_in(self, msg) -> fence.Delivery:
        """A Delivery for a message whose own headers or subject the fence refuses (a
        Nats-Msg-Id over 1,000 characters, a kind token over 200): the kind cut to what
        the table takes, no msg_id. Anyone who may publish on the subjects sets these."""
        meta = msg.metadata
        kind = self.names.kind_of(msg.subject).replace("\x00", "?")
        if not kind.strip():
            kind = "?"
        return fence.Delivery(stream=self.names.stream, seq=meta.sequence.stream,
                              delivery=meta.num_delivered, kind=kind[:200], worker=self.name)

    async def _ack(self, msg, delivery: fence.Delivery) -> None:
        try:
            await msg.ack_sync(timeout=5)
        except Exception as exc:  # lost with the connection: the redelivery finds it 'done'
            self._log("ack-failed", seq=delivery.seq, error=one_line(exc))

    async def _heartbeat(self, msg) -> None:
        while True:
            await asyncio.sleep(self.heartbeat)
            with contextlib.suppress(Exception):  # a missed beat: the lease may run out
                await msg.in_progress()

    async def _process(self, msg) -> None:
        """One delivery, to its end: a result, a retry (nak with a delay) or a dead letter.
        Whatever goes wrong outside the handler (the database is gone) is logged and the
        message stays unacknowledged: it comes back after ack_wait, a retry of its own."""
        try:
            try:
                delivery = self._delivery(msg)
            except (TypeError, ValueError) as exc:  # headers or subject the fence refuses
                await self._failed(msg, self._stand_in(msg),
                                   InvalidJob(f"the message cannot be registered: {one_line(exc)}"))
                return
            await self._run(msg, delivery)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._log("process-failed", seq=_seq(msg), error=one_line(exc))

    async def _run(self, msg, delivery: fence.Delivery) -> None:
        state = await self._in_db(fence.begin, delivery)
        if state == "done":  # recorded before, only the ack was lost
            self.stats["redone"] += 1
            self._log("redone", seq=delivery.seq, delivery=delivery.delivery)
            await self._ack(msg, delivery)
            return
        if state == "stale":
            self.stats["stale"] += 1
            self._log("stale", seq=delivery.seq, delivery=delivery.delivery)
            return
        self._log("started", seq=delivery.seq, delivery=delivery.delivery, kind=delivery.kind,
                  waited=_waited(msg.headers))
        ctx = BrokerContext(delivery, self.name)
        self._contexts.add(ctx)
        self._inflight[delivery.seq] = (msg, delivery)
        beat = asyncio.ensure_future(self._heartbeat(msg)) if self.heartbeat else None
        error: BaseException | None = None
        try:
            payload = _parse(msg.data)
            handler = self.handlers.get(delivery.kind)
            if handler is None:
                raise InvalidJob(f"no handler for kind {delivery.kind!r}")
            args = (payload, ctx) if takes_context(handler) else (payload,)
            result = await self._loop.run_in_executor(self._pool, lambda: handler(*args))
            self._inflight.pop(delivery.seq, None)  # from here on it is not handed back
            accepted = await self._in_db(fence.record, delivery, result)
        except Exception as exc:
            error = exc
        finally:
            self._inflight.pop(delivery.seq, None)
            if beat is not None:
                beat.cancel()
            self._contexts.discard(ctx)
        if error is None:
            if accepted:
                self.stats["finished"] += 1
                self._log("finished", seq=delivery.seq, delivery=delivery.delivery)
                await self._ack(msg, delivery)
            else:  # a newer delivery registered meanwhile: its result is the one that counts
                self.stats["stale"] += 1
                self._log("stale", seq=delivery.seq, delivery=delivery.delivery, refused="result")
            return
        await self._failed(msg, delivery, error)

    async def _failed(self, msg, delivery: fence.Delivery, error: BaseException) -> None:
        attempts = min(self.retry.max_attempts, delivery.delivery)
        if isinstance(error, InvalidJob) or delivery.delivery >= self.retry.max_attempts:
            await self._in_db(lambda conn, d: _dead_letter(
                conn, d, reason="failed", data=msg.data, error=one_line(error, 1000)), delivery)
            self.stats["dead"] += 1
            self._log("dead", seq=delivery.seq, attempts=attempts, error=one_line(error))
            with contextlib.suppress(Exception):
                await msg.term()
            return
        delay = self.retry.delay(delivery.delivery)
        self.stats["retried"] += 1
        self._log("retrying", seq=delivery.seq, attempt=delivery.delivery, delay=round(delay, 3),
                  error=one_line(error))
        with contextlib.suppress(Exception):
            await msg.nak(delay=delay)

    async def _advisory(self, js, msg) -> None:
        """JetStream stopped delivering a message (max_deliver reached by lease expiries):
        record it as a dead letter and remove it from the stream."""
        try:
            said = json.loads(msg.data)
            seq = int(said["stream_seq"])
            stored = await js.get_msg(self.names.stream, seq)
        except Exception as exc:  # already removed by another worker, or a bad advisory
            self._log("advisory-skipped", error=one_line(exc))
            return
        try:
            deliveries = int(said.get("deliveries") or self.retry.max_attempts)
            kind = self.names.kind_of(stored.subject)
            msg_id = (stored.headers or {}).get("Nats-Msg-Id")
            try:
                delivery = fence.Delivery(stream=self.names.stream, seq=seq, delivery=deliveries,
                                          kind=kind, worker=self.name, msg_id=msg_id)
            except (TypeError, ValueError):  # a header or subject the fence refuses
                delivery = fence.Delivery(stream=self.names.stream, seq=seq, delivery=deliveries,
                                          kind=(kind if kind.strip() else "?")[:200],
                                          worker=self.name)
            if await self._in_db(lambda conn, d: _dead_letter(
                    conn, d, reason="max_deliveries", data=stored.data,
                    error="ack_wait expired on every delivery"), delivery):
                self.stats["dead"] += 1
                self._log("dead", seq=seq, attempts=delivery.delivery, reason="max_deliveries")
        except Exception as exc:  # the database is gone: the message stays, logged
            self._log("advisory-failed", seq=seq, error=one_line(exc))
            return
        with contextlib.suppress(Exception):
            await js.delete_msg(self.names.stream, seq)


def _parse(data: bytes) -> Any:
    """The message's JSON body; InvalidJob (a dead letter at once, no retry can help) when
    it is not JSON, not UTF-8, has a number too long to convert, or nests deeper than the
    parser's recursion allows."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InvalidJob(f"the body is not JSON a worker can read: {one_line(exc, 200)}") from None


def _dead_letter(conn: psycopg.Connection, delivery: fence.Delivery, *, reason: str,
                 data: bytes, error: str) -> bool:
    """fence.dead_letter with the body as its payload when the body is JSON the table takes
    (within the payload limit), else with no payload and the reason said in `error`."""
    try:
        payload = _parse(data)
        return fence.dead_letter(conn, delivery, reason=reason, payload=payload, error=error)
    except (InvalidJob, psycopg.DataError) as exc:  # unreadable, too large, not storable
        note = f"{error} (payload not stored: {one_line(exc, 200)})"
        return fence.dead_letter(conn, delivery, reason=reason, payload=None, error=note[:10_000])


def _seq(msg) -> int | str:
    try:
        return msg.metadata.sequence.stream
    except Exception:
        return "?"


def _waited(headers: Mapping[str, str] | None) -> float | str:
    """Seconds since the publisher's submitted-at header, for the 'started' line; '' when
    there is none or it is not a number (anyone who may publish on the subject sets headers:
    a bad one must not fail the job)."""
    try:
        submitted = float((headers or {})[SUBMITTED_AT])
    except (KeyError, TypeError, ValueError):
        return ""
    return round(time.time() - submitted, 6) if math.isfinite(submitted) else ""
