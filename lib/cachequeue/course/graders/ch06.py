"""Chapter 06's exercise: `send_receipt(conn, *, order, job_id)` records the receipt of an
order at most once, and says whether this call sent it.

    print(ch06.check_send_receipt(send_receipt))   # "检查通过", or an AssertionError

The grader builds a schema of its own (`chapter.scratch`, dropped at the end) with the
chapter's `receipts` table and two jobs, and opens two sessions on it: the learner's
function never sees the notebook's connection or its rows, so a right answer passes however
often it runs, and nothing is left behind. It calls the function as a job and its re-run
would (same order twice, then another order), then races two runs of one job:
`statements.gap` runs the second run, on the other session, between the first and the
second statement of the first run (right after it, for an answer of one statement), which
is where a read-then-write answer lets both runs see "no receipt yet". The other session
waits at most `LOCK_TIMEOUT` for a row lock, so an answer that holds one turns into an
error instead of a hang.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from ... import db
from ...checks import check_callable
from .. import chapter
from ..app import effects
from ..probes import statements

__all__ = ["LOCK_TIMEOUT", "PASSED", "check_send_receipt"]

PASSED = "检查通过"
LOCK_TIMEOUT = "2s"
_ORDERS = ("2001", "2002", "2003")
_SECOND_RUN = ("同一个订单的第二次执行撞上了唯一约束（UniqueViolation）：重复执行是至少一次的常态，"
               "不是错误；用 INSERT ... ON CONFLICT (business_key) DO NOTHING，由有没有插入一行"
               "来决定返回 True 还是 False（第 3 节、第 8 节）")
_GAP = ("两次执行交错时，后一次插入撞上了唯一约束：先查询、再插入，两条语句之间有缝隙，"
        "另一次执行正好从缝里插进来；应当让一条 INSERT ... ON CONFLICT 来判定（第 8 节）")


def _sent(value: Any, what: str) -> bool:
    """The learner's return value as a bool, or an AssertionError naming what it should be."""
    if value is None:
        raise AssertionError(f"{what}，send_receipt 却返回了 None：忘了 return 吗？"
                             f"这次调用真正发出了收据时返回 True，早已发过时返回 False（第 8 节）")
    if not isinstance(value, bool):
        raise AssertionError(f"send_receipt 应返回 True 或 False，实际返回了 {value!r}"
                             f"（{type(value).__name__}）：看 INSERT ... RETURNING 有没有返回行，"
                             f"例如 row is not None（第 8 节）")
    return value


def _call(send_receipt: Callable[..., Any], conn: psycopg.Connection, order: str,
          job_id: int, what: str) -> bool:
    try:
        return _sent(send_receipt(conn, order=order, job_id=job_id), what)
    except psycopg.errors.UniqueViolation:
        raise AssertionError(_SECOND_RUN) from None


def _runs(send_receipt: Callable[..., Any], conn: psycopg.Connection, setup: psycopg.Connection,
          job_a: int, job_b: int) -> None:
    """A job's first run, its re-run, another order; then the rows they left."""
    first = _call(send_receipt, conn, _ORDERS[0], job_a, "第一次执行应发出收据")
    assert first is True, (
        f"订单 {_ORDERS[0]} 的收据还没有发过，第一次执行应发出它并返回 True，实际返回了 False："
        f"插入成功时（RETURNING 返回了一行）返回 True（第 8 节）")
    second = _call(send_receipt, conn, _ORDERS[0], job_a, "同一个任务再执行一次应返回 False")
    assert second is False, (
        "同一个订单的第二次执行不应再发收据，应返回 False，实际返回了 True：ON CONFLICT DO NOTHING "
        "之后要看这一次有没有真正插入（RETURNING 有没有返回行，或 rowcount），不能总是返回 True（第 3 节、第 8 节）")
    other = _call(send_receipt, conn, _ORDERS[1], job_b, "另一个订单有自己的收据")
    assert other is True, (
        f"订单 {_ORDERS[1]} 是另一个订单，它的收据还没有发过，应返回 True，实际返回了 False："
        f"业务键要包含订单号，每个订单各有一个（第 3 节）")
    rows = setup.execute("SELECT business_key, job_id FROM receipts ORDER BY business_key").fetchall()
    expected = [(f"receipt:{_ORDERS[0]}", job_a), (f"receipt:{_ORDERS[1]}", job_b)]
    keys = [key for key, _ in rows]
    assert keys == [key for key, _ in expected], (
        f"receipts 表里应是每个订单一行，业务键是 receipt:<订单号>（例如 receipt:{_ORDERS[0]}），"
        f"实际写入的业务键是 {keys}（第 8 节的题目）")
    assert rows == expected, (
        f"每一行收据要记下发出它的任务号（参数 job_id）：应为 {expected}，实际是 {rows}（第 8 节的题目）")


def _race(send_receipt: Callable[..., Any], conn: psycopg.Connection,
          rerun: psycopg.Connection, job_a: int) -> None:
    """Two runs of one job at once: the other run goes into the gap between two statements."""
    order = _ORDERS[2]
    try:
        with statements.gap(conn, lambda: send_receipt(rerun, order=order, job_id=job_a)) as race:
            racing = send_receipt(conn, order=order, job_id=job_a)
    except psycopg.errors.UniqueViolation:
        raise AssertionError(_GAP) from None
    except psycopg.errors.LockNotAvailable:
        raise AssertionError(
            "两次执行交错时，另一次执行在等这一次锁住的行：收据的判定不应靠持锁等待，"
            "一条 INSERT ... ON CONFLICT DO NOTHING 不需要显式的锁（第 8 节）") from None
    outcomes = (_sent(racing, "交错的两次执行之一"), _sent(race.result, "交错的两次执行之一"))
    assert outcomes in [(True, False), (False, True)], (
        f"同时运行的两次执行应当恰好有一次发出收据（一个 True、一个 False），实际是 "
        f"{outcomes[0]}, {outcomes[1]}：查询与插入之间有缝隙时，两次都以为自己是第一次；"
        f"让唯一约束通过 INSERT ... ON CONFLICT DO NOTHING RETURNING 来判定（第 8 节）")
    count = rerun.execute("SELECT count(*) FROM receipts WHERE business_key = %s",
                          [f"receipt:{order}"]).fetchone()[0]
    assert count == 1, f"交错的两次执行之后，订单 {order} 应有一行收据，实际有 {count} 行"


def check_send_receipt(send_receipt: Callable[..., Any], *, url: str | None = None) -> str:
    """Grade `send_receipt(conn, *, order, job_id)` on a schema of its own (see the module
    docstring). Returns PASSED; a wrong answer is an AssertionError whose Chinese message
    names the cause and the section that teaches it. `url` picks another server than
    `db.database_url()`."""
    check_callable(send_receipt, "send_receipt", "a function send_receipt(conn, *, order, job_id)")
    with (chapter.scratch("grade06", url=url) as (setup, name),
          db.connect(name, url=url) as conn, db.connect(name, url=url) as rerun):
        effects.install(setup)
        job_a = effects.submit(setup, "order-2001")
        job_b = effects.submit(setup, "order-2002")
        rerun.execute("SELECT set_config('lock_timeout', %s, false)", [LOCK_TIMEOUT])
        _runs(send_receipt, conn, setup, job_a, job_b)
        _race(send_receipt, conn, rerun, job_a)
        return PASSED
