"""The exercise checks of chapters 08 (fold_other) and 09 (handle_once) are graders: each
typical wrong answer the instructor's guide lists fails with the message the guide quotes,
and a right answer written differently from the reference passes, twice in a row."""

from __future__ import annotations

import collections
import contextlib
import uuid
from pathlib import Path

import nbformat
import pytest

from cachequeue.course.labs import opsday
from cachequeue.course.probes import plans
from cachequeue.course.procs import relaylab
from cachequeue.queue import jobs, metrics, outbox

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


def _check(name: str) -> str:
    """The source of the notebook's one check cell."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    checks = [c.source for c in nb.cells if "check" in c.get("metadata", {}).get("tags", [])]
    assert len(checks) == 1, f"{name}: one check cell expected, found {len(checks)}"
    return checks[0]


def _verdict(source: str, names: dict) -> str:
    """'passed', or the message of the check's first failed assertion."""
    try:
        exec(source, dict(names))  # noqa: S102 - the notebook's own check cell
    except AssertionError as failed:
        return str(failed)
    return "passed"


# ---------------------------------------------------------------- chapter 08: fold_other

def _drops_the_rest(rows, top):
    return [r for r in rows if int(r["tenant"]) in top]


def _pending_only(rows, top):
    out = {}
    for r in rows:
        tenant = r["tenant"] if int(r["tenant"]) in top else "other"
        o = out.setdefault((tenant, r["kind"]), {"tenant": tenant, "kind": r["kind"],
                                                 "pending": 0, "running": 0})
        o["pending"] += r["pending"]
        o["running"] += r["running"] if tenant != "other" else 0
    return list(out.values())


def _unfolded(rows, top):
    return rows


def _one_other_for_all_kinds(rows, top):
    out = {}
    for r in rows:
        key = (r["tenant"], r["kind"]) if int(r["tenant"]) in top else ("other", "noop")
        o = out.setdefault(key, {"tenant": key[0], "kind": key[1], "pending": 0, "running": 0})
        o["pending"] += r["pending"]
        o["running"] += r["running"]
    return list(out.values())


def _right_with_a_counter_dict(rows, top):
    totals = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        key = (r["tenant"] if int(r["tenant"]) in set(top) else "other", r["kind"])
        totals[key][0] += r["pending"]
        totals[key][1] += r["running"]
    return [{"tenant": t, "kind": k, "pending": p, "running": n}
            for (t, k), (p, n) in totals.items()]


@pytest.mark.parametrize(("answer", "message"), [
    (_drops_the_rest, "合并不能丢掉或重复计数"),
    (_pending_only, "合并不能丢掉或重复计数"),
    (_unfolded, "最多 5 个租户标签加上每种任务一行 other，实际有 1502 行"),
    (_one_other_for_all_kinds, "与 SQL 的合并结果不同："),
])
def test_fold_other_check_rejects_the_typical_wrong_answers(conn, answer, message):
    names = {"conn": conn, "opsday": opsday, "plans": plans, "jobs": jobs, "metrics": metrics,
             "fold_other": answer}
    assert _verdict(_check("08_operations.ipynb"), names).startswith(message)


def test_fold_other_check_passes_another_right_answer_every_time(conn):
    names = {"conn": conn, "opsday": opsday, "plans": plans, "jobs": jobs, "metrics": metrics,
             "fold_other": _right_with_a_counter_dict}
    source = _check("08_operations.ipynb")
    assert [_verdict(source, names) for _ in range(2)] == ["passed", "passed"]


# ---------------------------------------------------------------- chapter 09: handle_once

def _always_applies(conn, event, apply):
    apply(event.payload)
    return True


def _applies_then_accepts(conn, event, apply):
    apply(event.payload)
    return outbox.accept(conn, event)


def _two_commits(conn, event, apply):
    if not outbox.accept(conn, event):
        return False
    apply(event.payload)
    return True


def _returns_nothing(conn, event, apply):
    with conn.transaction():
        if not outbox.accept(conn, event):
            return None
        apply(event.payload)
        return None


def _right_with_one_exit(conn, event, apply):
    with conn.transaction():
        fresh = outbox.accept(conn, event)
        if fresh:
            apply(event.payload)
    return fresh


def _names(conn, answer) -> dict:
    relaylab.install(conn)
    return {"conn": conn, "outbox": outbox, "uuid": uuid, "contextlib": contextlib,
            "handle_once": answer}


@pytest.mark.parametrize(("answer", "message"), [
    (_always_applies, "重复的事件应返回 False：实际是 [True, True, True, True]"),
    (_applies_then_accepts, "每个事件只应处理一次：实际处理了 [1, 1, 2, 1]"),
    (_two_commits, "apply 失败时事件 id 不能被记下：重新投递后这个事件应当被处理"),
    (_returns_nothing, "重复的事件应返回 False：实际是 [None, None, None, None]"),
])
def test_handle_once_check_rejects_the_typical_wrong_answers(conn, answer, message):
    assert _verdict(_check("09_intent_recovery.ipynb"), _names(conn, answer)) == message


def test_handle_once_check_passes_another_right_answer_every_time(conn):
    source, names = _check("09_intent_recovery.ipynb"), _names(conn, _right_with_one_exit)
    assert [_verdict(source, names) for _ in range(2)] == ["passed", "passed"]
