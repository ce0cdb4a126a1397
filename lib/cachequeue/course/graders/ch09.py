"""Chapter 09's exercise: `handle_once(conn, event, apply)` handles an outbox event unless its
event id was handled before, and records the id in the same transaction as `apply`'s change.

    print(ch09.check_handle_once(handle_once))   # "检查通过", or an AssertionError naming the cause

The check runs the learner's function on a consumer of its own (a scratch schema with the
outbox's `inbox` table, dropped at the end), through five situations, each one a typical
wrong answer gets wrong:

    1. events one, one, two, one              duplicates return False, apply runs once each
    2. two events with the same payload        dedup is by event id, not by content
    3. an event another consumer process       the record is the inbox table, not a set in
       handled before this one restarted       this process's memory
    4. apply raises (the consumer's own        the error propagates, the id is not recorded,
       database went away), then redelivery    and the redelivered event is handled
    5. after every call                        no transaction left open on the connection

Every run uses new event ids on a new schema, so the verdict does not change when it is run
again; the learner's own connection is not used.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from ... import db
from ...checks import check_callable
from ...queue import outbox
from .. import chapter

__all__ = ["check_handle_once"]

PASSED = "检查通过"
_TOPIC = "job.submitted"


class _Outage(ConnectionError):
    """What the check's `apply` raises once: the consumer's own database went away."""


def _event(n: int) -> outbox.Event:
    return outbox.Event(0, uuid.uuid4(), _TOPIC, {"n": n})


def _recorded(other: psycopg.Connection, event: outbox.Event) -> bool:
    """Whether `event`'s id is in the inbox, as another session sees it (nothing written)."""
    with other.transaction(force_rollback=True):
        return not outbox.accept(other, event)


class _Consumer:
    """The learner's function on the check's connection, with one `apply` that records."""

    def __init__(self, handle_once: Callable[..., Any], conn: psycopg.Connection) -> None:
        self.handle_once, self.conn, self.applied = handle_once, conn, []

    def apply(self, payload: dict[str, Any]) -> None:
        self.applied.append(payload["n"])

    def __call__(self, event: outbox.Event, apply: Callable[[dict[str, Any]], None] | None = None,
                 *, what: str) -> Any:
        try:
            answer = self.handle_once(self.conn, event, apply or self.apply)
        except _Outage:
            raise
        except Exception as exc:  # the learner's error, named with the call that raised it
            raise AssertionError(
                f"{what}时 handle_once 抛出 {type(exc).__name__}: {exc}（第 2 节：outbox.accept 与 "
                f"conn.transaction()）") from exc
        status = self.conn.info.transaction_status
        assert status == TransactionStatus.IDLE, (
            f"{what}之后连接上还留着一个{'出错的' if status == TransactionStatus.INERROR else '打开的'}"
            f"事务：inbox 的那一行没有提交，别的会话看不到它；用 with conn.transaction(): 把 accept 与 "
            f"apply 包起来，离开时自动提交（第 2 节）")
        return answer


def _answers(consumer: _Consumer, events: list[outbox.Event], what: str) -> list[Any]:
    return [consumer(e, what=what) for e in events]


def check_handle_once(handle_once: Callable[..., Any], *, url: str | None = None) -> str:
    """Grade `handle_once(conn, event, apply)` in the five situations of the module docstring;
    "检查通过", or an AssertionError naming the cause. `url`: another server (tests)."""
    check_callable(handle_once, "handle_once")
    with chapter.scratch("ch09_check", url=url) as (_, name), \
            db.connect(name, url=url) as conn, db.connect(name, url=url) as other:
        outbox.install(other)
        consumer = _Consumer(handle_once, conn)

        one, two = _event(1), _event(2)
        answers = _answers(consumer, [one, one, two, one], "依次处理事件 one、one、two、one ")
        assert all(a is True or a is False for a in answers), (
            f"handle_once 应返回 True（这次处理了）或 False（重复，什么也没做），实际是 {answers}"
            "：两个分支都要 return（第 6 节的练习说明）")
        assert answers == [True, False, True, False], (
            f"依次处理 one、one、two、one，应返回 [True, False, True, False]，实际是 {answers}："
            f"重复的事件返回 False，outbox.accept 的返回值就说明它是不是第一次（第 2 节）")
        assert consumer.applied == [1, 2], (
            f"每个事件只应处理一次：apply 收到的是 {consumer.applied}，应是 [1, 2]；先用 "
            f"outbox.accept 判断是不是重复，是重复就不要调用 apply（第 2 节）")
        assert _recorded(other, one) and _recorded(other, two), (
            "处理过的事件 id 应当记在数据库的 inbox 表里（outbox.accept），并且已经提交，"
            "另一个会话却看不到它们：进程内存里的集合在重启后就没了，别的消费进程也看不到（第 2 节）")

        twins = [outbox.Event(0, uuid.uuid4(), _TOPIC, {"n": 4}) for _ in range(2)]
        answers = _answers(consumer, twins, "两个内容相同的不同事件")
        assert answers == [True, True] and consumer.applied == [1, 2, 4, 4], (
            f"两个事件内容相同、事件 id 不同，都应当处理（实际返回 {answers}）：去重的依据是事件 id"
            f"（event.event_id），不是内容（第 2 节）")

        before_restart = _event(5)
        with other.transaction():  # handled by this consumer's previous process
            assert outbox.accept(other, before_restart)
        answer = consumer(before_restart, what="一个重启之前已经处理过的事件")
        assert answer is False and consumer.applied == [1, 2, 4, 4], (
            f"这个事件在消费方重启之前已经处理过（它的 id 已在 inbox 表里），应返回 False、不调用 "
            f"apply，实际返回 {answer!r}：去重要查数据库里的 inbox（outbox.accept），进程内存里的"
            f"集合在重启后就没了（第 2 节）")

        three, outcomes = _event(3), iter([_Outage("the consumer's own database went away"), None])

        def fails_once(payload: dict[str, Any]) -> None:
            error = next(outcomes)
            if error is not None:
                raise error
            consumer.apply(payload)

        try:
            swallowed = consumer(three, fails_once, what="apply 抛出异常")
        except _Outage:
            swallowed = None
        else:
            raise AssertionError(
                f"apply 抛出了异常，handle_once 却正常返回了 {swallowed!r}：异常要传出去，让事务"
                f"回滚、让投递方知道这个事件没有处理好，不要捕获后返回（第 2 节）")
        assert not _recorded(other, three), (
            "apply 失败时事件 id 不能被记下：它已经在 inbox 里了，重新投递时会被当作重复丢掉，"
            "这个事件就永远不会被处理。accept 与 apply 要在同一个事务里（with conn.transaction():），"
            "apply 抛出异常时一起回滚（第 2 节）")
        redelivered = consumer(three, fails_once, what="重新投递 apply 失败过的事件")
        assert redelivered is True and consumer.applied == [1, 2, 4, 4, 3], (
            f"重新投递后这个事件应当被处理、返回 True，实际返回 {redelivered!r}，apply 收到的是 "
            f"{consumer.applied}（第 2 节）")
    return PASSED
