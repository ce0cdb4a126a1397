"""Chapter 01's exercise: `summary_or_fallback(cache, model, doc_id, text)` degrades when
the cache is busy, and only then."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ...cache import CacheBusy, LoadingCache
from ...checks import check_callable, check_text
from ...clock import ManualClock
from ..app.summariser import Summariser, SummariserError, summarise_text

__all__ = ["TEXTS", "check_summary_or_fallback"]

TEXTS = {1: "一号文档的正文。", 2: "二号文档的正文。", 3: "三号文档的正文。"}
# Eleven requests at once: five for document 1, five for document 2, one for document 3.
REQUESTS = [1] * 5 + [2] * 5 + [3]


async def _call(fn: Callable[..., Any], cache: LoadingCache, model: Summariser, doc_id: int,
                where: str) -> Any:
    try:
        return await fn(cache, model, doc_id, TEXTS[doc_id])
    except CacheBusy as exc:
        raise AssertionError(
            f"{where}：缓存忙（CacheBusy）没有被接住，它传到了调用方。忙时应当返回 FALLBACK，"
            "而不是重试或再读一次缓存（第 6 节“回源上限”；第 12 节练习第 2 条）") from exc


async def _busy_part(fn: Callable[..., Any], fallback: str) -> None:
    clock = ManualClock()
    cache, model = LoadingCache(max_pending=2, clock=clock), Summariser()
    answers = await asyncio.gather(*(_call(fn, cache, model, d, "11 个并发请求")
                                      for d in REQUESTS))
    expected = [summarise_text(TEXTS[1])] * 5 + [summarise_text(TEXTS[2])] * 5
    assert answers[:10] == expected, (
        "文档 1 和文档 2 应各由一次共享的加载得到摘要，实际有请求没拿到摘要："
        "加入在途加载从不被拒绝，不要自己数在途的加载；每篇文档要有自己的键"
        "（第 2 节“请求合并”、第 6 节）")
    assert answers[10] == fallback, (
        f"两个加载在途时，第三篇文档应得到 FALLBACK，实际得到 {answers[10]!r}："
        "要通过 cache.get_or_load 读取，并在 CacheBusy 时返回 FALLBACK（第 6 节）")
    assert model.calls == 2, (
        f"每篇文档应只调用一次模型，实际调用了 {model.calls} 次：同一篇文档的请求要用同一个键、"
        "经过同一个缓存（第 2 节）")
    calls = model.calls
    clock.advance(29)  # entries loaded at 0 with ttl=30 are still fresh
    again = await _call(fn, cache, model, 1, "29 秒后再读文档 1")
    assert again == expected[0] and model.calls == calls, (
        "29 秒后文档 1 的摘要应当仍从缓存中读到（ttl=30），实际又调用了模型（第 3 节）")
    clock.advance(2)
    await _call(fn, cache, model, 1, "31 秒后再读文档 1")
    assert model.calls == calls + 1, "ttl 应为 30 秒：31 秒后文档 1 应当重新加载（第 3 节）"


async def _failure_part(fn: Callable[..., Any], fallback: str) -> None:
    cache, model = LoadingCache(max_pending=2, clock=ManualClock()), Summariser()
    model.fail_next(1)
    try:
        got = await _call(fn, cache, model, 3, "模型失败时")
    except SummariserError:
        pass
    else:
        raise AssertionError(
            f"模型失败必须交给调用方，不能变成 FALLBACK：只接住 CacheBusy，不要接住 "
            f"SummariserError 或 Exception（实际返回 {got!r}；第 7 节、第 9 节）")
    got = await _call(fn, cache, model, 3, "失败之后再读")
    assert got == summarise_text(TEXTS[3]), (
        f"失败不缓存：模型恢复后再读，应得到摘要，实际是 {got!r}（第 7 节）")


async def check_summary_or_fallback(summary_or_fallback: Callable[..., Any],
                                    fallback: str) -> str:
    """Grade the exercise on fresh caches and models: eleven requests at once with
    `max_pending=2` (documents 1 and 2 share one load each, document 3 gets `fallback`),
    the entries live for 30 s, and a model failure reaches the caller."""
    check_callable(summary_or_fallback, "summary_or_fallback")
    check_text(fallback, "fallback")
    await _busy_part(summary_or_fallback, fallback)
    await _failure_part(summary_or_fallback, fallback)
    return "检查通过"
