"""Chapter 00's exercise: `advance_both(clock, conn, seconds)` moves both clocks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg

from ... import db
from ...checks import check_callable, check_instance
from ...clock import EPOCH, ManualClock

__all__ = ["check_advance_both"]

_SECTION = "（第 2 节“数据库时钟 cq_now()”；第 5 节的练习说明）"


def _now(conn: psycopg.Connection) -> Any:
    return conn.execute("SELECT cq_now()").fetchone()[0]


def check_advance_both(advance_both: Callable[..., Any], conn: psycopg.Connection) -> str:
    """Grade `advance_both` on a fresh `ManualClock` and `conn`: 30 s then 20 s land the
    database clock at EPOCH + 30 s and EPOCH + 50 s, it stays frozen there, the returned
    value is what the database reads, and a refused -5 changes neither clock. The session's
    clock is released afterwards, pass or fail."""
    check_callable(advance_both, "advance_both")
    check_instance(conn, "conn", psycopg.Connection)
    clock = ManualClock()
    try:
        first = advance_both(clock, conn, 30)
        assert first == EPOCH + timedelta(seconds=30), (
            f"第一次拨动后数据库时钟应在 EPOCH 之后 30 秒，实际是 {first}" + _SECTION)
        second = advance_both(clock, conn, 20)
        assert second == clock.datetime() == EPOCH + timedelta(seconds=50), (
            "两次拨动应当累加：30 + 20 = 50 秒，数据库时钟要跟着手动时钟的读数 clock.datetime()"
            + _SECTION)
        assert _now(conn) == second, (
            "数据库时钟应停在这一刻，而不是继续走：最后不要 db.set_clock(conn, None)" + _SECTION)
        try:
            advance_both(clock, conn, -5)
        except ValueError:
            pass
        else:
            raise AssertionError("时钟不能倒退：负的秒数应当被拒绝（ValueError），不要吞掉它，"
                                 "也不要用 abs()" + _SECTION)
        assert clock() == 50, "被拒绝的拨动不应改变手动时钟" + _SECTION
        assert _now(conn) == second, (
            "被拒绝的拨动不应改变数据库时钟：先拨手动时钟（它会拒绝负数），再冻结数据库时钟"
            + _SECTION)
    finally:
        db.set_clock(conn, None)
    return "检查通过"
