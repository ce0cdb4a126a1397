"""Chapter 05's exercise: `exposing_sequence()` returns steps on which
`mutants.RetryTooLateModel` parts ways with PostgreSQL while `QueueModel` agrees."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from ... import db
from ...checks import check_autocommit_idle, check_callable
from ..model import lockstep, mutants

__all__ = ["check_exposing_sequence"]

MAX_STEPS = 200


def _as_steps(sequence: Any) -> list[lockstep.Step]:
    try:
        steps = list(sequence)
    except TypeError:
        steps = None
    assert steps is not None and all(isinstance(s, lockstep.Step) for s in steps), (
        f"exposing_sequence() 应当返回一串 Step（列表），实际是 {type(sequence).__name__}"
        "（第 5 节“同一串操作，交给 PostgreSQL”）")
    assert steps, "exposing_sequence() 返回了空列表：至少要提交、领取、失败、再领取（第 8 节提示）"
    assert len(steps) <= MAX_STEPS, f"最多 {MAX_STEPS} 步就够了，实际 {len(steps)} 步"
    return steps


def check_exposing_sequence(exposing_sequence: Callable[[], Any],
                            conn: psycopg.Connection) -> dict[str, Any]:
    """Replay the learner's steps twice on `conn`'s schema (each replay empties the queue
    tables first): with `QueueModel` they must agree with PostgreSQL, with
    `RetryTooLateModel` they must not. Returns the first difference (always at a claim:
    the mutant changes nothing else, so it is not checked). The session's clock is released afterwards, pass or fail."""
    check_callable(exposing_sequence, "exposing_sequence")
    check_autocommit_idle(conn, "check_exposing_sequence")
    steps = _as_steps(exposing_sequence())
    try:
        right = lockstep.replay(conn, steps)
        assert right.agree, (
            f"正确的模型必须与 PostgreSQL 一致，这串操作却在这里分歧：{right.first_difference()}"
            "（第 5 节；检查参数，例如 fail 的第一个参数是第几次领取，从 0 数起）")
        wrong = lockstep.replay(conn, steps, model_class=mutants.RetryTooLateModel)
    finally:
        db.set_clock(conn, None)
    difference = wrong.first_difference()
    if difference is None:
        retryable = [i for i, s in enumerate(steps) if s.op == "fail" and s.args[1:2] != (True,)]
        claims = [i for i, s in enumerate(steps) if s.op == "claim"]
        if not retryable or max(claims, default=-1) < min(retryable):
            raise AssertionError(
                "RetryTooLateModel 没有露出破绽：它只在重试的领取上出错，序列里要先有一次"
                "可重试的失败（fail(0, False)，不是永久错误），然后再领取（第 8 节）")
        raise AssertionError(
            "RetryTooLateModel 没有露出破绽：要在重试恰好到期的那一刻领取，"
            "即失败后把时钟恰好拨过退避时间（第 1 次失败后是 2 秒），不多也不少（第 8 节提示）")
    return difference
