"""The grader of chapter 03's exercise: a learner's `claim_one(conn, worker)`, run on a queue of its own.

    print(ch03.check_claim_one(claim_one))   # "检查通过", or an AssertionError naming the cause

`check_claim_one` builds a private schema (dropped at the end), opens two sessions `a` and `b` on it
with their database clocks frozen, and fills the queue so that each typical wrong answer
takes a job a right one never takes:

    job        run_after        state      a wrong answer that takes it
    running    0 s              running    no `state = 'pending'` filter
    future     120 s            pending    no `run_after <= cq_now()` filter, or now()
    late       10 s             pending    no ORDER BY (it has the smallest due id)
    early      0 s              pending    (the first one due: a right answer's first)
    mid        5 s              pending

At 20 s, `a` claims inside an open transaction (it must get `early` and hold its row lock);
`b` claims meanwhile (it must get `mid` in ONE statement, without waiting: the sessions run
with a `lock_timeout`, so waiting for a's lock becomes an error instead of a hang); after
a's commit `b` gets `late`, then None. Both sessions read the table sequentially
(`_SEQUENTIAL`), so a claim without ORDER BY gets the jobs in the table's order. Last, the three claimed rows must be `running`,
attempt 1, locked by their claimer, leased for 30 s from `cq_now()`, each with a new token.

Every run starts from the same state, so a right answer passes any number of times; the
learner's own connections are never used, so nothing is left set on them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg

from ... import db
from ...checks import check_callable
from ...clock import ManualClock
from ...queue import jobs
from .. import chapter
from ..probes import statements

__all__ = ["LOCK_TIMEOUT", "PASSED", "check_claim_one"]

PASSED = "检查通过"
LOCK_TIMEOUT = "1s"
"""How long a claim may wait for a row lock before the grader calls it waiting (a right
answer never waits at all)."""

_SEQUENTIAL = ("enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan")
"""Turned off on a and b: the partial index `jobs_runnable` returns rows in (run_after, id)
order, which would hide a missing ORDER BY; a sequential scan returns them in the table's
order, where `late` comes first (a right answer sorts, so the plan does not matter to it)."""

_LEASE = timedelta(seconds=30)
_NOW = 20.0  # seconds after the set-up started: early, mid and late are due, future is not


def _queue(setup: psycopg.Connection, clock: ManualClock) -> dict[str, int]:
    """The five jobs of the module docstring; returns their ids by role."""
    ids = {"running": jobs.submit(setup, tenant_id=1, kind="noop", payload={"role": "running"})}
    assert jobs.claim(setup, lease=600, worker="other").job_id == ids["running"]
    ids["future"] = jobs.submit(setup, tenant_id=1, kind="noop", payload={"role": "future"},
                                run_after=120)
    ids["late"] = jobs.submit(setup, tenant_id=1, kind="noop", payload={"role": "late"}, run_after=10)
    ids["early"] = jobs.submit(setup, tenant_id=1, kind="noop", payload={"role": "early"})
    ids["mid"] = jobs.submit(setup, tenant_id=1, kind="noop", payload={"role": "mid"}, run_after=5)
    clock.advance(_NOW)
    return ids


def _judge(got: Any, expected: int | None, ids: dict[str, int], who: str) -> None:
    """Raise AssertionError naming the cause when `who`'s claim returned `got`, not `expected`."""
    if got is not None and (isinstance(got, bool) or not isinstance(got, int)):
        raise AssertionError(f"claim_one 应返回任务号（一个整数）或 None，实际返回了 {got!r}："
                             f"取出 RETURNING id 那一行的第一个值（row[0]）")
    if got == expected:
        return
    if got == ids["running"]:
        raise AssertionError(f"{who} 领到了一个正在运行、租约还没到期的任务：选行时只能选 "
                             f"state = 'pending' 的任务（第 4 节）")
    if got == ids["future"]:
        raise AssertionError(f"{who} 领到了一个还没到期的任务（它的 run_after 在 100 秒之后）："
                             f"选行时要加上 run_after <= cq_now()；到期与否按数据库时钟 cq_now() 判断，"
                             f"不是 now()（第 4 节、第 7 节末尾）")
    if got is None:
        raise AssertionError(f"{who} 没有领到任务，可此刻还有到期的 pending 任务没被锁住："
                             f"子查询要选出 state = 'pending' AND run_after <= cq_now() 的任务（第 4 节）")
    if expected is None:
        raise AssertionError(f"到期的任务都领完了，{who} 这一次应得到 None，实际又领到了任务 {got}")
    raise AssertionError(f"{who} 应领到最早到期的任务（按 run_after, id 排序），实际领到了一个 "
                         f"run_after 更晚的任务：子查询写了 ORDER BY run_after, id 吗？（第 4 节）")


def _claim_in_one_statement(claim_one: Callable, b: psycopg.Connection) -> Any:
    with statements.recording(b) as sent:
        got = claim_one(b, "b")
    if len(sent) != 1:
        raise AssertionError(f"claim_one 应当用一条语句完成选行、加锁和改状态，实际发出了 "
                             f"{len(sent)} 条：两条语句之间，别的工作者可以领走同一行（第 3、4 节）")
    return got


def _claims(claim_one: Callable, a: psycopg.Connection, b: psycopg.Connection,
            ids: dict[str, int]) -> None:
    try:
        with a.transaction():
            by_a = claim_one(a, "a")  # a has not committed: it holds the row lock of its job
            taken = a.execute("SELECT count(*) FROM jobs WHERE state = 'running'").fetchone()[0]
            if taken > 2:
                raise AssertionError(f"一次领取应只改一个任务，a 的一次领取却让 {taken - 1} 个任务变成了 "
                                     f"running：子查询要 LIMIT 1（第 4 节）")
            _judge(by_a, ids["early"], ids, "a")
            by_b = _claim_in_one_statement(claim_one, b)
            _judge(by_b, ids["mid"], ids, "b（a 正锁着最早的任务）")
    except psycopg.errors.LockNotAvailable:
        raise AssertionError("b 在等待 a 锁住的行：选行的子查询要加锁并跳过被锁的行"
                             "（FOR UPDATE SKIP LOCKED，第 4 节）") from None
    except psycopg.errors.CheckViolation:
        raise AssertionError("任务表拒绝了这次领取：running 的任务必须有租约令牌和租约终点，"
                             "lease_token = gen_random_uuid()、locked_until = cq_now() + interval "
                             "'30 seconds' 都要写（第 4 节）") from None
    _judge(_claim_in_one_statement(claim_one, b), ids["late"], ids, "b（a 已提交）")
    _judge(_claim_in_one_statement(claim_one, b), None, ids, "b")


def _rows(setup: psycopg.Connection, ids: dict[str, int]) -> None:
    claimed = {ids["early"]: "a", ids["mid"]: "b", ids["late"]: "b"}
    rows = setup.execute("SELECT id, state::text, attempts, locked_by, locked_until - cq_now(), "
                         "lease_token FROM jobs WHERE id = ANY(%s) ORDER BY id",
                         [list(claimed)]).fetchall()
    for job_id, state, attempts, locked_by, lease, _token in rows:
        if state != "running":
            raise AssertionError(f"领到的任务应为 running，实际是 {state}")
        if attempts != 1:
            raise AssertionError(f"第一次领取之后尝试次数应为 1，实际是 {attempts}："
                                 f"attempts = attempts + 1（第 4 节）")
        if locked_by != claimed[job_id]:
            raise AssertionError(f"locked_by 应写领取它的工作者（{claimed[job_id]!r}），"
                                 f"实际是 {locked_by!r}：用参数 worker")
        if lease != _LEASE:
            raise AssertionError(f"租约应为 30 秒，实际从数据库时钟算是 {lease}：租约要从 cq_now() "
                                 f"算起（cq_now() + interval '30 seconds'），不是 now() 或 "
                                 f"clock_timestamp()（第 7 节末尾）")
    tokens = {row[5] for row in rows}
    if len(tokens) != 3:
        raise AssertionError("每次领取要换一枚新的租约令牌（lease_token = gen_random_uuid()），"
                             f"三次领取却只有 {len(tokens)} 枚不同的令牌")
    future = setup.execute("SELECT state::text, attempts FROM jobs WHERE id = %s",
                           [ids["future"]]).fetchone()
    if future != ("pending", 0):
        raise AssertionError(f"还没到期的任务不应被改动，实际是 {future}")


def check_claim_one(claim_one: Callable[[psycopg.Connection, str], Any], *, url: str | None = None) -> str:
    """Grade `claim_one(conn, worker)` on a private queue (see the module docstring).

    Returns PASSED; a wrong answer is an AssertionError whose message names the cause and
    the section that teaches it. An exception raised by `claim_one` itself propagates. `url`
    picks another server than `db.database_url()`."""
    check_callable(claim_one, "claim_one", "a function claim_one(conn, worker)")
    with (chapter.scratch("grade03", url=url) as (setup, name),
          db.connect(name, url=url) as a, db.connect(name, url=url) as b):
        clock = ManualClock()
        for session in (setup, a, b):
            db.set_clock(session, clock.datetime())
        ids = _queue(setup, clock)
        for session in (setup, a, b):
            db.set_clock(session, clock.datetime())
        for session in (a, b):
            session.execute("SELECT set_config('lock_timeout', %s, false)", [LOCK_TIMEOUT])
            for setting in _SEQUENTIAL:  # rows come in the table's order unless sorted
                session.execute("SELECT set_config(%s, 'off', false)", [setting])
        _claims(claim_one, a, b, ids)
        _rows(setup, ids)
        return PASSED
