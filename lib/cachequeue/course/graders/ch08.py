"""Chapter 08's exercise: `fold_other(rows, top)` folds the `depth` rows of every tenant into
the tenants of `top` and one `other` row per kind, as `metrics.figure(conn, "depth", top=top)`
does in SQL.

    print(ch08.check_fold_other(fold_other))   # "检查通过", or an AssertionError naming the cause

The check builds a queue of its own (a scratch schema, dropped at the end) in which each
typical wrong answer gives a result the SQL never gives:

    tenants 100 .. 399   two noop jobs each, some running     most of them end in `other`
    tenants 100 .. 109   one summarise job each                `other` has a second kind
    tenant 5             40 noop jobs                          the busiest
    tenant 6             12 noop and 3 summarise jobs          a top tenant with two kinds
    tenant 7             8 summarise jobs, all running         pending 0, running 8

and folds with three lists `top`: the five busiest tenants, [7, 100] (a small tenant among
the others), and [] (everything is `other`). Each run starts from the same state, so the
verdict does not change when it is run again; the learner's own connection is not used.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from typing import Any

from ... import db
from ...checks import check_callable
from ...queue import jobs, metrics
from .. import chapter
from ..probes import plans

__all__ = ["check_fold_other"]

PASSED = "检查通过"
_FIELDS = ("tenant", "kind", "pending", "running")
_SECTION = "第 1.2 节"


def _queue(conn: Any) -> None:
    """The jobs of the module docstring."""
    plans.fill_pending(conn, 600, tenant_id=100, tenants=300)  # tenants 100 .. 399, 2 each
    for tenant in range(100, 110):
        jobs.submit(conn, tenant_id=tenant, kind="summarise", payload={})
    plans.fill_pending(conn, 40, tenant_id=5)
    plans.fill_pending(conn, 12, tenant_id=6)
    for _ in range(3):
        jobs.submit(conn, tenant_id=6, kind="summarise", payload={})
    for _ in range(8):
        jobs.submit(conn, tenant_id=7, kind="summarise", payload={})
    jobs.claim_many(conn, 8, kinds=["summarise"])  # tenant 100 .. 107's summarise jobs
    jobs.claim_many(conn, 30, kinds=["noop"])  # the oldest noop jobs: tenants 100 .. 129
    jobs.claim_many(conn, 8, kinds=["summarise"])  # 108, 109, tenant 6's three, three of 7's
    jobs.claim_many(conn, 5, kinds=["summarise"])  # the rest of tenant 7's


def _call(fold_other: Callable[..., Any], rows: list[dict[str, Any]], top: list[int]) -> Any:
    try:
        return fold_other(copy.deepcopy(rows), list(top))
    except Exception as exc:  # the learner's error, named with the input that raised it
        raise AssertionError(
            f"top={top} 时 fold_other 抛出 {type(exc).__name__}: {exc}；输入是 depth 查询不合并时的行，"
            f"例如 {rows[0]}（第 4 节的练习说明）") from exc


def _shape(got: Any, top: list[int]) -> list[dict[str, Any]]:
    """The learner's rows as a list of dicts with the four fields, or an AssertionError."""
    assert got is not None, "fold_other 应当返回合并后的行（一个列表），实际返回了 None：忘了 return？（第 4 节的练习说明）"
    try:
        rows = list(got)
    except TypeError:
        raise AssertionError(f"fold_other 应当返回一个由字典组成的列表，实际返回了 {type(got).__name__}"
                             "（第 4 节的练习说明）") from None
    for row in rows:
        assert isinstance(row, dict) and set(_FIELDS) <= row.keys(), (
            f"每一行应是一个字典，带 {list(_FIELDS)} 四个键，实际有一行是 {row!r}")
    for row in rows:
        assert isinstance(row["tenant"], str), (
            f"租户标签应是字符串，和输入的行一样（\"{row['tenant']}\"、\"other\"），实际是 "
            f"{row['tenant']!r}：标签是 Prometheus 序列的一部分，5 与 \"5\" 是两个标签（{_SECTION}）")
    return rows


def _judge(rows: list[dict[str, Any]], expected: list[dict[str, Any]],
           unfolded: list[dict[str, Any]], top: list[int]) -> None:
    """Raise AssertionError naming the cause when `rows` is not `expected`."""
    key = Counter((r["tenant"], r["kind"]) for r in rows)
    twice = sorted(k for k, n in key.items() if n > 1)
    labels = {r["tenant"] for r in rows}
    kept = {str(t) for t in top}
    if top and not labels & kept and {r["tenant"] for r in unfolded} & kept:
        raise AssertionError(
            f"top={top} 里的租户一个也没有保留自己的标签，全部并进了 other：top 里是整数，行里的 "
            f"tenant 是字符串（\"5\"），直接比较永远不相等；先转换，例如 int(row[\"tenant\"]) in top"
            f"（{_SECTION}）")
    strays = sorted(labels - kept - {"other"}, key=lambda t: (len(t), t))
    if strays:
        raise AssertionError(
            f"top={top} 时，不在 top 里的租户也保留了自己的标签（{', '.join(strays[:5])}"
            f"{' ……' if len(strays) > 5 else ''}，共 {len(strays)} 个）：它们的计数应当加到同一种任务的 "
            f"other 行上，否则标签的数目没有上限（{_SECTION}）")
    for field in ("pending", "running"):
        want, got = sum(r[field] for r in unfolded), sum(r[field] for r in rows)
        assert got == want, (
            f"top={top} 时 {field} 的总数应是 {want}，实际是 {got}：合并不能丢掉或重复计数，"
            f"不在 top 里的租户的 {field} 也要加进 other（{_SECTION}：other 是其余租户之和）")
    assert not twice, (
        f"同一个标签与种类出现了不止一行：{twice[:3]}；每个 (tenant, kind) 只应有一行，"
        f"同一种任务的其余租户合成一行 other（{_SECTION}）")
    kinds = {r["kind"] for r in unfolded if r["tenant"] not in kept}
    others = {r["kind"] for r in rows if r["tenant"] == "other"}
    assert others == kinds, (
        f"top={top} 时 other 行的种类应是 {sorted(kinds)}，实际是 {sorted(others)}：每种任务各有"
        f"一行 other，不同种类的计数不能并在一起，也不能换种类（{_SECTION}）")
    mine = {(r["tenant"], r["kind"]): {f: r[f] for f in _FIELDS} for r in rows}
    theirs = {(r["tenant"], r["kind"]): {f: r[f] for f in _FIELDS} for r in expected}
    missing = sorted(theirs.keys() - mine.keys())
    assert not missing, (
        f"top={top} 时少了这些行：{missing[:3]}；top 里的租户每种任务各保留一行，不同种类不能"
        f"并在一起（{_SECTION}）")
    wrong = [(mine[k], theirs[k]) for k in sorted(theirs) if mine[k] != theirs[k]]
    assert not wrong and mine.keys() == theirs.keys(), (
        f"top={top} 时与 SQL 的合并结果不同，例如你的 {wrong[0][0] if wrong else sorted(mine)}，"
        f"SQL 的 {wrong[0][1] if wrong else sorted(theirs)}：每一行的 pending 与 running 是该标签、"
        f"该种类下所有租户之和（{_SECTION}）")


def _without_empty_others(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An `other` row with nothing in it says nothing: an answer may keep it or leave it out."""
    return [r for r in rows if r["tenant"] != "other" or r["pending"] or r["running"]]


def check_fold_other(fold_other: Callable[..., Any], *, url: str | None = None) -> str:
    """Grade `fold_other(rows, top)` on a queue of its own against `metrics.figure("depth",
    top=top)` for three lists `top`; "检查通过", or an AssertionError naming the cause.
    `url`: another server than the course's (tests)."""
    check_callable(fold_other, "fold_other")
    with chapter.scratch("ch08_check", url=url) as (_, name), \
            db.connect(name, url=url) as session:
        _queue(session)
        unfolded = metrics.figure(session, "depth", top=None)
        tops = [metrics.top_tenants(session, 5), [7, 100], []]
        assert tops[0][:3] == [5, 6, 7], tops  # the state the docstring describes
        expected = {i: metrics.figure(session, "depth", top=top) for i, top in enumerate(tops)}
    for i, top in enumerate(tops):
        rows = _without_empty_others(_shape(_call(fold_other, unfolded, top), top))
        _judge(rows, expected[i], unfolded, top)
    return PASSED
