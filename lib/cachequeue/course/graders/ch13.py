"""The grader of chapter 13's exercise: a learner's `handle`, run on streams and a schema of its own.

    print(ch13.check_handle(handle, r, ns))   # "检查通过", or an AssertionError

The rule the exercise teaches (chapter 13 §4) is *store the result with a fenced write, and
acknowledge only once that write was accepted*: XACK does not ask who acknowledges, so an
acknowledgement sent too early, or by a delivery whose write was refused, removes a delivery
that another consumer still needs. `check_handle` hands `handle` a queue whose `ack` notes, at the
moment of the call, what PostgreSQL holds for the entry, and plays four scenarios:

1. takeover, newest first: `a` is stuck, `b` takes over (delivery 2) and finishes first,
   then `a` wakes. `b` must return "done" and acknowledge only when its result is already
   stored under `summary:<id>` with fence 2; `a` must return "stale" and not acknowledge;
2. takeover, newest not yet acknowledged: `b`'s result is stored but `b` has not acknowledged
   yet when `a` wakes. `a`'s write is refused; if `a` acknowledges anyway, `b`'s delivery
   leaves the pending list (nobody would take it over if `b` crashed now);
3. a handler that fails: nothing may be acknowledged, the entry stays pending;
4. the attempt cap: the third delivery is processed ("done"), the fourth goes to the
   dead-letter stream ("dead") without calling the handler, and is acknowledged with it.

Every run uses fresh streams under `prefix` (deleted at the end) and a private PostgreSQL
schema (dropped at the end), so a right answer passes any number of times; the learner's
own connection and keys are never used.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

import redis

from ... import db, shared
from ...checks import check_callable, check_instance
from ...shared import fenced_read, fenced_write
from ...shared.client import check_namespace
from .. import chapter
from ..procs import streamlab

__all__ = ["PASSED", "check_handle"]

PASSED = "检查通过"
SECTION = "第 4 节"


class HandlerFailed(RuntimeError):
    """What the failing handler of scenario 3 raises (a model call that failed)."""


class _Watched:
    """A StreamQueue whose `ack` and `dead_letter` are noted with what PostgreSQL holds then."""

    def __init__(self, queue: streamlab.StreamQueue, conn) -> None:
        self._queue, self._conn = queue, conn
        self.acks: list[tuple[str, Any]] = []
        self.dead_lettered: list[str] = []

    def ack(self, entry_id: str) -> int:
        self.acks.append((entry_id, fenced_read(self._conn, f"summary:{entry_id}")))
        return self._queue.ack(entry_id)

    def dead_letter(self, delivery: streamlab.Delivery, reason: str) -> str:
        self.dead_lettered.append(delivery.id)
        return self._queue.dead_letter(delivery, reason)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)


def _takeover(queue: streamlab.StreamQueue) -> tuple[str, streamlab.Delivery, streamlab.Delivery]:
    job = queue.submit(document="7")
    (paused,) = queue.take("a")
    queue.age(job, 600)
    (newest,) = queue.reclaim("b", lease=300)
    return job, paused, newest


def _summarise(calls: list[str]) -> Callable[[dict], dict]:
    def summarise(payload: dict) -> dict:
        calls.append(payload["document"])
        return {"summary": f"第 {payload['document']} 号文档的摘要"}
    return summarise


def _call(handle: Callable[..., Any], conn, queue, delivery, handler) -> Any:
    try:
        return handle(conn, queue, delivery, handler)
    except NotImplementedError:
        raise AssertionError("handle 还是学生版的 raise NotImplementedError：按练习的三步写出它") from None


def _newest_first(handle, conn, client: redis.Redis, key: str) -> None:
    queue = _Watched(streamlab.StreamQueue(client, key), conn)
    calls: list[str] = []
    job, paused, newest = _takeover(queue._queue)
    expected = {"summary": "第 7 号文档的摘要"}
    b_verdict = _call(handle, conn, queue, newest, _summarise(calls))
    b_acks = [stored for entry, stored in queue.acks if entry == job]
    stored = fenced_read(conn, f"summary:{job}")
    if stored != (2, expected):
        raise AssertionError(
            f"b 的结果应当以投递次数 2 为防护令牌写在 summary:<消息 id>（这里是 summary:{job}）："
            f"实际那里是 {stored}（资源名用消息 id，令牌用 delivery.deliveries，{SECTION}）")
    if b_acks and b_acks[0] is None:
        raise AssertionError(
            "先确认、后写入：b 确认时 PostgreSQL 里还没有它的结果。确认之后、写入之前崩溃，任务就丢了；"
            f"先用 fenced_write 保存结果，写入被接受之后才 queue.ack（{SECTION}）")
    if b_verdict != "done":
        raise AssertionError(f"b 接手后先完成，写入被接受，应返回 done：实际是 {b_verdict!r}")
    if not b_acks or b_acks[0] != (2, expected):
        raise AssertionError("b 的结果写入被接受之后，它应当确认这条消息（queue.ack(delivery.id)）")
    queue.acks.clear()
    a_verdict = _call(handle, conn, queue, paused, _summarise(calls))
    if queue.acks:
        raise AssertionError(
            "暂停的 a 醒来后写入被拒绝，却仍然确认了：XACK 不问是谁在确认，旧投递的确认会删掉新持有者的投递；"
            f"写入被拒绝时不要确认（{SECTION}）")
    if a_verdict != "stale":
        raise AssertionError(f"暂停的 a 迟到的写入被拒绝，应返回 stale：实际是 {a_verdict!r}")
    if fenced_read(conn, f"summary:{job}") != (2, expected):
        raise AssertionError(f"a 迟到的结果覆盖了 b 的结果：要用 fenced_write 写入（{SECTION}）")


def _newest_unacknowledged(handle, conn, client: redis.Redis, key: str) -> None:
    queue = _Watched(streamlab.StreamQueue(client, key), conn)
    job, paused, newest = _takeover(queue._queue)
    fenced_write(conn, f"summary:{job}", newest.deliveries, {"summary": "b 的结果"})
    verdict = _call(handle, conn, queue, paused, _summarise([]))
    holders = [(p["consumer"], p["times_delivered"]) for p in queue.pending()]
    if queue.acks or holders != [("b", 2)]:
        raise AssertionError(
            "b 已经写入结果、还没来得及确认，暂停的 a 醒来：a 的写入被拒绝，却确认了这条消息，"
            f"b 的投递随之离开了待确认列表（剩下 {holders}），b 若此刻崩溃，再没有人接手。"
            f"只有写入被接受的一方才确认（{SECTION}）")
    if verdict != "stale":
        raise AssertionError(f"写入被拒绝的旧投递应返回 stale：实际是 {verdict!r}")


def _handler_fails(handle, conn, client: redis.Redis, key: str) -> None:
    queue = _Watched(streamlab.StreamQueue(client, key), conn)
    job = queue.submit(document="9")
    (delivery,) = queue.take("a")

    def failing(payload: dict) -> dict:
        raise HandlerFailed("the model call failed")

    with contextlib.suppress(HandlerFailed):  # letting it escape is right; so is catching it
        _call(handle, conn, queue, delivery, failing)
    if queue.acks or queue.pending(job) == []:
        raise AssertionError(
            "处理函数失败了，消息却已经被确认：先确认、后处理，失败的任务再也不会重投。"
            f"处理函数返回、结果写入被接受之后才确认（{SECTION}）")
    if fenced_read(conn, f"summary:{job}") is not None:
        raise AssertionError("处理函数失败了，不应写入任何结果")


def _cap(handle, conn, client: redis.Redis, key: str) -> None:
    queue = _Watched(streamlab.StreamQueue(client, key), conn)
    calls: list[str] = []
    edge = queue.submit(document="8")
    (delivery,) = queue.take("a")
    for _ in range(2):
        queue.age(edge, 600)
        (delivery,) = queue.reclaim("b", lease=300)
    verdict = _call(handle, conn, queue, delivery, _summarise(calls))
    if verdict != "done":
        raise AssertionError(
            f"投递了 3 次（没有超过上限 3）的消息应当照常处理并返回 done：实际是 {verdict!r}"
            "（上限的比较是“超过”，即 deliveries > max_deliveries）")
    bad = queue.submit(document="13")
    (delivery,) = queue.take("a")
    for _ in range(3):
        queue.age(bad, 600)
        (delivery,) = queue.reclaim("b", lease=300)
    calls.clear()
    verdict = _call(handle, conn, queue, delivery, _summarise(calls))
    if calls:
        raise AssertionError("投递了 4 次的消息不应再调用处理函数：先检查投递次数，再处理（第 2 节的死信）")
    if verdict != "dead":
        raise AssertionError(f"投递了 4 次的消息应当进死信流并返回 dead：实际是 {verdict!r}")
    dead = [fields["source_id"] for _, fields in client.xrange(queue.dead)]
    if dead != [bad]:
        raise AssertionError(f"死信流里应当恰好有这条消息（用 queue.dead_letter）：实际是 {dead}")
    if queue.pending() != []:
        raise AssertionError("写进死信流的同时，原消息应当被确认（queue.dead_letter 会一起确认）")


def check_handle(handle: Callable[..., Any], client: redis.Redis, prefix: str, *,
          url: str | None = None) -> str:
    """Grade `handle(conn, queue, delivery, handler, *, max_deliveries=3)` (module docstring).

    `client` is a redis-py client with decoded replies, `prefix` a key namespace of the caller
    (`shared.namespace(...)`): the grader's streams live under it and are deleted at the end.
    Returns PASSED; a wrong answer is an AssertionError whose message names the cause and the
    section that teaches it. `url` picks another PostgreSQL than `db.database_url()`."""
    check_callable(handle, "handle", "a function handle(conn, queue, delivery, handler)")
    check_instance(client, "client", redis.Redis)
    check_namespace(prefix)
    keys = f"{prefix}ch13:{uuid.uuid4().hex[:12]}:"
    try:
        with chapter.scratch("grade13", url=url) as (_, name), db.connect(name, url=url) as conn:
            shared.fencing.install(conn)
            for n, scenario in enumerate((_newest_first, _newest_unacknowledged, _handler_fails,
                                          _cap)):
                scenario(handle, conn, client, f"{keys}{n}")
            return PASSED
    finally:
        made = list(client.scan_iter(match=keys + "*", count=100))
        if made:
            client.unlink(*made)
