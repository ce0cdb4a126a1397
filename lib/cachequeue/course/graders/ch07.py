"""Chapter 07's exercise: `missed_events(client, job_id, headers, last_seen)` resumes a
job's event stream after `last_seen` (the `Last-Event-ID` request header)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...checks import check_callable, check_int

__all__ = ["check_missed_events", "events_after"]

_STATE = ("先重新运行上面准备第 6 节（李雷的英文摘要）与第 7 节（韩梅的任务）的单元格，"
          "再运行试用与检查单元格：检查单元格自己读到的事件与预期不符")


def events_after(client: Any, job_id: int, headers: Mapping[str, str],
                 last_seen: int) -> list[tuple[int, str]] | None:
    """The reference reading: (number, name) of the events after `last_seen`, [] on 204,
    None when the service answers 404 (another tenant's job, or no such job)."""
    from httpx_sse import connect_sse  # a `lab` extra, like the chapter that uses this

    resume = dict(headers) | {"Last-Event-ID": str(last_seen)}
    with connect_sse(client, "GET", f"/v1/jobs/{job_id}/events", headers=resume) as source:
        status = source.response.status_code
        if status == 404:
            return None
        if status == 204:
            return []
        source.response.raise_for_status()
        return [(int(sse.id), sse.event) for sse in source.iter_sse()]


def _call(fn: Callable[..., Any], client: Any, job_id: int, headers: dict[str, str],
          last_seen: int, expected: list[tuple[int, str]]) -> Any:
    try:
        return fn(client, job_id, headers, last_seen)
    except Exception as exc:  # the learner's error, named with the case that raised it
        hint = ("服务此时返回 204（没有更多事件）：先看 source.response.status_code，"
                "是 204 就返回空列表，不要去读事件流" if not expected else
                "读事件流时出错")
        raise AssertionError(
            f"last_seen={last_seen} 时函数抛出 {type(exc).__name__}: {exc}；{hint}（第 7 节）"
        ) from exc


def check_missed_events(missed_events: Callable[..., Any], client: Any, *, job: int,
                        headers: Mapping[str, str], second_job: int,
                        second_headers: Mapping[str, str], foreign_job: int,
                        foreign_headers: Mapping[str, str]) -> str:
    """Grade the exercise against the live service behind `client`: `job` (three events,
    accepted/started/done) after 0..3, `second_job` after 1 with the caller's headers
    unchanged, and `foreign_job` read with another tenant's headers must raise. The check
    first reads every case itself; stale state is reported as such, not as a wrong answer."""
    check_callable(missed_events, "missed_events")
    for name, value in (("job", job), ("second_job", second_job), ("foreign_job", foreign_job)):
        check_int(value, name, minimum=1)
    full = events_after(client, job, headers, 0)
    second = events_after(client, second_job, second_headers, 1)
    foreign = events_after(client, foreign_job, foreign_headers, 0)
    assert full == [(1, "accepted"), (2, "started"), (3, "done")], _STATE
    assert second == [(2, "started"), (3, "done")] and foreign is None, _STATE

    for seen in range(4):
        expected = full[seen:]
        given = dict(headers)
        got = _call(missed_events, client, job, given, seen, expected)
        assert isinstance(got, list), (
            f"应当返回列表，last_seen={seen} 时实际返回 {type(got).__name__}：{got!r}（第 7 节）")
        assert all(isinstance(p, tuple) and len(p) == 2 for p in got), (
            f"列表里应是 (编号, 事件名) 二元组，实际是 {got!r}")
        assert all(type(n) is int for n, _ in got), (
            f"编号应当是整数：sse.id 是字符串，要用 int() 转换；实际是 {got!r}（第 7 节）")
        assert got == expected, (
            f"last_seen={seen} 之后应是 {expected}，实际是 {got}：把 last_seen 放进 "
            "Last-Event-ID 请求头，由服务从断点续发（第 7 节）")
        assert given == dict(headers), (
            f"调用方传进来的 headers 被改动了（多了 {sorted(set(given) - set(headers))}）："
            "复制一份再加 Last-Event-ID，例如 headers | {...}（第 7 节练习说明）")

    given = dict(second_headers)
    got = _call(missed_events, client, second_job, given, 1, second)
    assert got == second, (
        f"李雷的任务 {second_job} 在事件 1 之后应是 {second}，实际是 {got}：任务号和请求头要用参数，"
        "不要写死（第 7 节）")
    assert given == dict(second_headers), (
        "调用方传进来的 headers 被改动了：复制一份再加 Last-Event-ID（第 7 节练习说明）")
    try:
        leaked = missed_events(client, foreign_job, dict(foreign_headers), 0)
    except Exception:  # the service answered 404; any error will do, silence will not
        return "检查通过"
    raise AssertionError(
        f"别的租户的任务必须报错（服务返回 404），不能当作“没有新事件”：实际返回 {leaked!r}；"
        "只有 204 才表示没有更多事件，其余非 200 的响应要报错，例如 "
        "source.response.raise_for_status()（第 8 节）")
