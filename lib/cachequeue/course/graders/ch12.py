"""The grader of chapter 12's capstone: one step's function at a time, judged on its probe's facts.

`check_step(step, answer, *context)` runs the step's probe (`labs.capstone.probe_*`: the
sample data, the database steps inside a rolled-back transaction) and returns PASSED, or
raises AssertionError with a Chinese message that names the first cause it finds (and the
chapter that teaches it). The student copy's NotImplementedError goes through as it is. Its
tests keep, per step, wrong answers with their messages and right answers that differ from
the reference (tests/unit/course/test_graders_ch12.py,
tests/integration/course/test_graders_ch12_db.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from ...checks import check_callable, check_int
from ..labs.capstone import probe_key, probe_metrics, probe_publish, probe_read, probe_retry, probe_submit

__all__ = ["PASSED", "check_step"]

# --- the graders: one per step, each asserting on its probe's facts ------------------------

PASSED = "检查通过"


def _grade_key(summary_key: Callable[..., str]) -> str:
    facts = probe_key(summary_key)
    got = facts["dimensions"]
    if not isinstance(facts["key"], str):
        raise AssertionError(f"summary_key 应当返回 cache_key 生成的字符串：实际是 {facts['key']!r}（忘了 return？）")
    if got is None:
        raise AssertionError(f"键应当由 cache_key 生成（第 02 章），自己拼的字符串读不出维度：实际是 {facts['key']!r}")
    if got.get("viewer") in ("11", "user-11", 11):
        raise AssertionError(f"键里的视图是用户 id（{got['viewer']!r}）：视图来自角色（store.authorize 的返回值），"
              "按用户区分会让每位成员各存一份相同的摘要（第 02 章）")
    if got != {"tenant": 1, "document": 42, "version": 3, "viewer": "member", "template": "brief-zh"}:
        raise AssertionError(f"李雷读第 42 号文档的键应当由 cache_key 生成，含租户 1、文档 42、第 3 版、视图 member、维度 template：实际是 {facts['key']!r}")
    if not facts["members_share"]:
        raise AssertionError("李雷与韩梅都是成员，应当共用同一个键：视图来自角色，不是用户 id")
    if not facts["admin_apart"]:
        raise AssertionError("权限视图是键的一个维度：管理员王敏（视图 admin）的键必须与成员的不同（第 02 章）")
    if not facts["template_apart"]:
        raise AssertionError("英文模板是另一份结果，键必须不同")
    if "v=4" not in str(facts["new_version"]):
        raise AssertionError(f"文档有了第 4 版，键里的版本也应当是 4（读当前的行）：实际是 {facts['new_version']!r}")
    refusals = (facts["other_tenant"], facts["admins_only"], facts["deleted"])
    if refusals != ("PermissionDenied",) * 3:
        raise AssertionError(f"另一个租户的用户、读仅管理员可见的文档、读已删除的文档，都应当抛出 PermissionDenied：实际是 {refusals}。"
              "先调用 store.authorize(user_id, document_id)，再算键（第 02 章第 4 节）")
    return PASSED


def _unwritten(*values: Any) -> None:
    """The student copy: a probe that records exceptions by name saw NotImplementedError."""
    for value in values:
        if value == "NotImplementedError" or (isinstance(value, list) and "NotImplementedError" in value):
            raise NotImplementedError("the step's function is not written yet")


async def _grade_read(read_summary: Callable[..., Any]) -> str:
    facts = await probe_read(read_summary)
    _unwritten(facts["together"])
    if facts["loads_together"] != 1 or len(set(map(str, facts["together"]))) != 1:
        raise AssertionError(f"五位成员同时读同一份摘要，应当只加载一次、得到同一个结果：实际加载 {facts['loads_together']} 次，得到 {facts['together']}。"
              "未命中的加载要交给 cache.get_or_load，由它合并并发的读（第 01 章）")
    if (facts["admin_loaded"], facts["member_again_loaded"]) != (1, 0):
        raise AssertionError(f"管理员读要另加载一次，成员再读应当命中：实际分别加载了 {facts['admin_loaded']} 次与 {facts['member_again_loaded']} 次")
    if (facts["admins_only"], facts["admins_only_loaded"]) != ("PermissionDenied", 0):
        raise AssertionError(f"成员读仅管理员可见的文档，应当在调用模型之前抛出 PermissionDenied：实际是 {facts['admins_only']}，加载了 {facts['admins_only_loaded']} 次")
    if facts["after_revocation"] != "PermissionDenied":
        raise AssertionError(f"文档改为仅管理员可见后，缓存里的旧摘要不能再给成员：每次读都先授权，实际得到 {facts['after_revocation']!r}")
    if facts["new_version_load"] != (42, 4, "brief-zh"):
        raise AssertionError(f"文档有了第 4 版，应当按第 4 版加载：实际最后一次加载是 {facts['new_version_load']}")
    if facts["failed_then_retried"][0] != "RuntimeError" or facts["loads_of_44"] != 2:
        raise AssertionError(f"加载失败时异常交给读者、什么也不缓存，下一次读重新加载：实际是 {facts['failed_then_retried']}，加载了 {facts['loads_of_44']} 次")
    return PASSED


def _grade_submit(submit_summary: Callable[..., int], conn: psycopg.Connection) -> str:
    facts = probe_submit(conn, submit_summary)
    _unwritten(facts["first"])
    if not isinstance(facts["first"], int) or isinstance(facts["first"], bool):
        raise AssertionError(f"submit_summary 应当返回任务号：实际是 {facts['first']!r}")
    repeats = [facts[name] for name in ("first", "again", "colleague", "admin")]
    if len(set(repeats)) != 1:
        raise AssertionError(f"同一份摘要（租户、文档、版本、模板都相同），无论谁请求、请求几次，都应当是同一个任务：实际是 {repeats}。"
              "幂等键用 summaries.business_key(租户, 文档, 版本, 模板)，不含用户（第 07 章）")
    others = [facts["first"], facts["english"], facts["new_version"], facts["other_tenant"]]
    if len(set(others)) != 4:
        raise AssertionError(f"另一个模板、另一个版本、另一个租户，各是一个新任务：实际是 {others}")
    if facts["row"] != (1, "summarise", {"document_id": 42, "version": 3, "template": "brief-zh"},
                        "summary:1:42:v3:brief-zh"):
        raise AssertionError(f"任务的租户、类型、载荷与幂等键应当是工作者和服务所期望的：实际是 {facts['row']}")
    if facts["other_row"] is None or facts["other_row"][0] != 2:
        raise AssertionError("赵律的任务属于租户 2")
    if (facts["refused"], facts["refused_wrote"]) != ("PermissionDenied", 0):
        raise AssertionError(f"无权阅读的用户提交时，应当抛出 PermissionDenied 且什么也不写：实际是 {facts['refused']}，写入了 {facts['refused_wrote']} 个任务")
    return PASSED


def _grade_publish(publish_summary: Callable[..., Any], conn: psycopg.Connection) -> str:
    try:
        facts = probe_publish(conn, publish_summary)
    except psycopg.errors.UniqueViolation:
        raise AssertionError("第二次发布同一个业务键时数据库报 UniqueViolation：普通的 INSERT 遇到已有的行会失败，"
              "写成 INSERT ... ON CONFLICT (business_key) DO NOTHING（第 06 章）") from None
    except TypeError as error:
        if "NoneType" in str(error):
            raise AssertionError(f"冲突时 INSERT ... ON CONFLICT DO NOTHING RETURNING 不返回任何行（{error}）："
                  "已有摘要时要另外 SELECT 出表里保存的那一份") from None
        raise
    if facts["first"] != "第一次运行的摘要":
        raise AssertionError(f"第一次运行应当发布自己的摘要并返回它：实际返回 {facts['first']!r}")
    if facts["second"] != "第一次运行的摘要":
        stored = [row[2] for row in facts["rows"] if row[0] == "summary:1:42:v3:brief-zh"]
        cause = ("表里已经被换成了重试的文字：ON CONFLICT 要 DO NOTHING，不能 DO UPDATE"
                 if stored == ["重试时的摘要"] else
                 "表里保存的仍是第一次的文字，返回的却是参数：要返回表里保存的那一份")
        raise AssertionError(f"重试不能覆盖已发布的摘要，应当返回第一次运行的那一份：实际返回 {facts['second']!r}（{cause}，第 06 章）")
    if facts["other"] != "第四版的摘要":
        raise AssertionError("另一个版本是另一个业务键，有自己的摘要")
    if facts["rows"] != [("summary:1:42:v3:brief-zh", 1, "第一次运行的摘要"),
                         ("summary:1:42:v4:brief-zh", 2, "第四版的摘要")]:
        raise AssertionError(f"每个业务键一行，保留第一次运行的任务号与摘要：实际是 {facts['rows']}")
    return PASSED


EVENTS = [("accepted", "pending"), ("started", "running"), ("done", "done")]


def _grade_follow(follow: Callable[..., Any], client: Any, headers: dict[str, str]) -> str:
    try:
        welcome = client.post("/v1/documents/44/summaries", headers=headers)
    except Exception as error:  # httpx.ConnectError and its kin: no service listening
        raise AssertionError(f"向服务提交失败（{type(error).__name__}）：服务已经停了吗？"
                             "先重新运行第 5 步启动服务与工作者的单元格，再运行检查") from None
    if welcome.status_code != 202:
        raise AssertionError(f"提交应当得到 202：实际是 {welcome.status_code}（服务还在运行吗？先重新运行第 5 步启动服务的单元格）")
    job_id = welcome.json()["id"]
    try:
        events = follow(client, job_id, headers)
    except ValueError as error:  # json.JSONDecodeError is one
        raise AssertionError(f"follow 抛出了 {type(error).__name__}：事件接口回答的是一个事件流（text/event-stream），"
              "不是一个 JSON 文档；用 httpx_sse.connect_sse 逐个读事件，每个事件的 data 才是 JSON（第 07 章）") from None
    events = list(events) if isinstance(events, tuple) else events
    if isinstance(events, list) and any(isinstance(e, tuple) and len(e) == 2 and isinstance(e[1], str)
                                        and e[1].startswith("{") for e in events):
        raise AssertionError(f"事件的第二项应当是状态（JSON 数据里的 state 字段），不是整段数据：实际是 {events[:1]}…"
              "用 json.loads(sse.data)[\"state\"]")
    if events != EVENTS:
        raise AssertionError(f"事件流应当依次是 accepted、started、done，流在任务完成时结束：实际是 {events}")
    final = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
    if final["state"] != "done" or final["output"]["document_id"] != 44:
        raise AssertionError(f"事件流结束后，状态接口应当给出完成的任务和第 44 号文档的摘要：实际状态是 {final['state']}")
    return PASSED


def _grade_retry(fail_summary: Callable[..., Any], conn: psycopg.Connection) -> str:
    facts = probe_retry(conn, fail_summary)
    states = [state for _, state, _ in facts["transient"]]
    waits = [wait for _, _, wait in facts["transient"]][:5]
    if states == [None] * len(states):
        raise AssertionError(f"fail_summary 应当返回任务的新状态（jobs.fail 的返回值），实际是 {states}：忘了 return？")
    if states != ["pending"] * 5 + ["failed"]:
        raise AssertionError(f"超时可以重试：前 5 次失败后回到 pending，第 6 次失败后进入 failed；实际是 {states}")
    if waits != [1.0, 2.0, 4.0, 5.0, 5.0]:
        raise AssertionError(f"抖动取到上限时，等待应当是 1、2、4、5、5 秒（翻倍，封顶 5 秒）：实际是 {waits}。"
              "RetryPolicy 要有 base=1.0 与 cap=5.0，并把 rng 原样交给 jobs.fail（第 04 章）")
    if facts["permanent"] != [("PermanentError", "failed", 1), ("LookupError", "failed", 1)]:
        raise AssertionError(f"永久错误与不存在的版本应当在第一次失败时就进入 failed：实际是 {facts['permanent']}")
    return PASSED


def _grade_metrics(job_counts: Callable[..., Any], conn: psycopg.Connection) -> str:
    facts = probe_metrics(conn, job_counts)
    if facts["columns"][:3] != ["tenant_id", "state", "jobs"]:
        raise AssertionError(f"列应当是 tenant_id、state、jobs：实际是 {facts['columns']}")
    if facts["got"] != facts["expected"]:
        raise AssertionError(f"按租户与状态的计数应当与任务表一致：应为 {facts['expected']}，实际是 {facts['got']}")
    if facts["got_after"] != facts["expected_after"]:
        raise AssertionError(f"加入租户 2 的两个等待中的任务和一个已取消的任务之后：应为 {facts['expected_after']}，实际是 {facts['got_after']}")
    return PASSED


_GRADERS: dict[int, Callable[..., Any]] = {1: _grade_key, 2: _grade_read, 3: _grade_submit,
                                           4: _grade_publish, 5: _grade_follow, 6: _grade_retry,
                                           7: _grade_metrics}


def check_step(step: int, answer: Callable[..., Any], *context: Any) -> Any:
    """Grade step `step`'s function: PASSED, or an AssertionError naming the first cause.

        ch12.check_step(1, summary_key)                 ch12.check_step(5, follow, http, headers)
        await ch12.check_step(2, read_summary)          ch12.check_step(6, fail_summary, conn)
        ch12.check_step(3, submit_summary, conn)        ch12.check_step(7, job_counts, conn)
        ch12.check_step(4, publish_summary, conn)

    Step 2's grader is a coroutine (the reads are awaited). Every grader starts from the
    sample data or a rolled-back transaction, so the verdict is the same on a re-run.
    """
    check_int(step, "step", minimum=1, maximum=7)
    check_callable(answer, "answer")
    return _GRADERS[step](answer, *context)
