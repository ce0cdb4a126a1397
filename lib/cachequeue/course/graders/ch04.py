"""The grader of chapter 04's exercise: a learner's `always_fail`, `summarise` and `run_rounds`, run on a queue of its own.

    print(ch04.check_run_rounds(always_fail, summarise, run_rounds))   # "检查通过", or an AssertionError

`check_run_rounds` builds a private schema (dropped at the end), submits the exercise's two jobs (a
`always_fail` job, then a `summarise` job), freezes the database clock on a new manual
clock at EPOCH and calls `run_rounds(conn, handlers, POLICY, clock, rounds=ROUNDS)` once.
Then it reads what happened and names the first cause it finds:

- the bad job must end `failed` after 3 attempts, two retries then a failure, each attempt
  with an error: any exception but `PermanentError` is retryable (chapter 04 §1), so
  `RetryableError`, `TimeoutError` and `RuntimeError` all pass (only the student copy's
  `NotImplementedError` is refused, as code not yet written);
- the good job is done after one attempt, at EPOCH (it does not wait behind the bad one),
  and only it has a result row;
- the manual clock stands at ROUNDS * POLICY.cap (the loop ran exactly `rounds` rounds)
  and the database clock with it (`db.set_clock`);
- the returned counts are those of every round together.

Every run starts from the same state, so a right answer passes any number of times; the
learner's own connection and clock are never used.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import psycopg

from ... import db
from ...checks import check_callable
from ...clock import EPOCH, ManualClock
from ...queue import jobs
from ...queue.retry import RetryPolicy
from .. import chapter

__all__ = ["EXPECTED", "PASSED", "POLICY", "ROUNDS", "check_run_rounds"]

PASSED = "检查通过"
POLICY = RetryPolicy(max_attempts=3, base=5.0, cap=60.0, jitter=False)
ROUNDS = 10
EXPECTED = Counter({"pending": 2, "failed": 1, "done": 1})
"""What `run_rounds` returns for a right answer: two retries, one failure, one success."""


def _bad_job(conn: psycopg.Connection, bad: int, clock: ManualClock) -> None:
    status = jobs.status(conn, tenant_id=1, job_id=bad)
    history = jobs.history(conn, bad)
    errors = [row["error"] for row in history]
    if status.state == "failed" and status.attempts == 1 and errors and \
            str(errors[0]).startswith("PermanentError"):
        raise AssertionError("always_fail 抛出了 PermanentError：永久错误一次就失败，不会重试；"
                             "练习要的是可重试的错误（PermanentError 以外的任何异常，第 1 节）")
    if any(str(e).startswith("NotImplementedError") for e in errors):
        raise AssertionError("always_fail 还是学生版的 raise NotImplementedError：换成一个表示供应商失败的"
                             "可重试错误，例如 raise RetryableError(\"the vendor keeps failing\")")
    if status.state == "done":
        raise AssertionError("坏任务完成了：always_fail 每次都要抛出异常，而不是返回结果")
    if (status.state, status.attempts) != ("failed", 3):
        database_now = conn.execute("SELECT cq_now()").fetchone()[0]
        if database_now == EPOCH:
            raise AssertionError(f"坏任务停在 {status.state}/{status.attempts}：数据库时钟前进了吗？"
                                 f"拨动手动时钟之后要用 db.set_clock(conn, clock.datetime()) "
                                 f"同步给数据库，重试的 run_after 才会到期（第 1 节）")
        raise AssertionError(f"坏任务应在 3 次尝试后进入 failed，实际是 {status.state}/{status.attempts}："
                             f"run_rounds 要运行 rounds 轮，每轮 drain 一次再把时钟拨 policy.cap 秒")
    if not status.last_error or None in errors:
        raise AssertionError("失败原因必须保留：always_fail 要抛出带消息的异常，不要吞掉错误")
    outcomes = [row["outcome"] for row in history]
    if outcomes != ["retry", "retry", "failed"]:
        raise AssertionError(f"坏任务应当是两次重试，然后失败，实际是 {outcomes}")


def _good_job(conn: psycopg.Connection, good: int, bad: int) -> None:
    status = jobs.status(conn, tenant_id=1, job_id=good)
    if (status.state, status.attempts) != ("done", 1):
        raise AssertionError(f"好任务应在一次尝试后完成，实际是 {status.state}/{status.attempts}"
                             f"（last_error: {status.last_error!r}）：summarise 要返回一个结果，"
                             f"例如 {{\"summary\": ...}}，而不是抛出异常")
    if status.finished_at != EPOCH:
        raise AssertionError("好任务不应排在坏任务后面等待：每一轮要用 single_pass.drain 处理此刻"
                             "可领取的所有任务，而不是只运行一次 run_once（第 6 节）")
    results = {row[0] for row in conn.execute("SELECT job_id FROM job_results").fetchall()}
    if results != {good}:
        raise AssertionError(f"只有成功的任务有结果行，实际有结果行的任务是 {sorted(results)}")


def _rounds(conn: psycopg.Connection, clock: ManualClock, outcomes: Any) -> None:
    if clock() != ROUNDS * POLICY.cap:
        raise AssertionError(f"运行 {ROUNDS} 轮、每轮拨 policy.cap = {POLICY.cap:g} 秒之后，手动时钟应在第 "
                             f"{ROUNDS * POLICY.cap:g} 秒，实际在第 {clock():g} 秒：循环要恰好运行 "
                             f"rounds 轮（有上限），每轮拨 policy.cap 秒")
    database_now = conn.execute("SELECT cq_now()").fetchone()[0]
    if database_now != clock.datetime():
        raise AssertionError("数据库时钟前进了吗？最后一轮之后它没有停在手动时钟的时刻："
                             "每次拨动手动时钟之后都要调用 db.set_clock(conn, clock.datetime())")
    if outcomes is None:
        raise AssertionError("run_rounds 没有返回值：最后要 return 所有轮次结果之和")
    if not isinstance(outcomes, Mapping) or Counter(dict(outcomes)) != EXPECTED:
        shown = dict(outcomes) if isinstance(outcomes, Mapping) else outcomes
        raise AssertionError(f"run_rounds 应返回所有轮次的结果之和（两次重试 pending、一次 failed、"
                             f"一次 done），实际是 {shown!r}：每一轮的 Counter 要加到总数上"
                             f"（total += ...），而不是覆盖它")


def check_run_rounds(always_fail: Callable[[dict], Any], summarise: Callable[[dict], Any],
          run_rounds: Callable[..., Any], *, url: str | None = None) -> str:
    """Grade the three functions on a private queue (see the module docstring).

    Returns PASSED; a wrong answer is an AssertionError whose message names the cause and
    the section that teaches it. An exception that escapes `run_rounds` propagates. `url`
    picks another server than `db.database_url()`."""
    check_callable(always_fail, "always_fail", "a handler always_fail(payload)")
    check_callable(summarise, "summarise", "a handler summarise(payload)")
    check_callable(run_rounds, "run_rounds", "a function run_rounds(conn, handlers, policy, clock, rounds)")
    with chapter.scratch("grade04", url=url) as (_, name), db.connect(name, url=url) as conn:
        clock = ManualClock()
        db.set_clock(conn, clock.datetime())
        bad = jobs.submit(conn, tenant_id=1, kind="always_fail", payload={"document_id": 9})
        good = jobs.submit(conn, tenant_id=1, kind="summarise", payload={"document_id": 10})
        handlers = {"always_fail": always_fail, "summarise": summarise}
        outcomes = run_rounds(conn, handlers, POLICY, clock, rounds=ROUNDS)
        _bad_job(conn, bad, clock)
        _good_job(conn, good, bad)
        _rounds(conn, clock, outcomes)
        return PASSED
