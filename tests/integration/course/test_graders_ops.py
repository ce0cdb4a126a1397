"""The graders of chapters 08 (`fold_other`) and 09 (`handle_once`) on a real server: each
typical wrong answer fails with the message that names its cause, right answers written
differently from the reference pass twice in a row, and a run leaves no schema behind."""

from __future__ import annotations

import collections

import pytest

from cachequeue import db
from cachequeue.course.graders import ch08, ch09
from cachequeue.queue import outbox


def _scratch_schemas(prefix: str) -> set[str]:
    with db.connect() as conn:
        return {row[0] for row in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",))}


# ---------------------------------------------------------------- chapter 08: fold_other

def fold_reference(rows, top):
    folded = {}
    for row in rows:
        tenant = row["tenant"] if int(row["tenant"]) in top else "other"
        total = folded.setdefault((tenant, row["kind"]), {"tenant": tenant, "kind": row["kind"],
                                                         "pending": 0, "running": 0})
        total["pending"] += row["pending"]
        total["running"] += row["running"]
    return list(folded.values())


def fold_with_counters(rows, top):
    """Right, another shape: a defaultdict of [pending, running], a set of string labels,
    rows built at the end with extra keys, as a generator."""
    kept = {str(t) for t in top}
    totals = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        label = r["tenant"] if r["tenant"] in kept else "other"
        totals[label, r["kind"]][0] += r["pending"]
        totals[label, r["kind"]][1] += r["running"]
    return ({"tenant": t, "kind": k, "pending": p, "running": n, "folded": t == "other"}
            for (t, k), (p, n) in totals.items())


def fold_in_place(rows, top):
    """Right, another shape: mutates the input rows and keeps an empty other row per kind."""
    out = [r for r in rows if int(r["tenant"]) in top]
    for kind in sorted({r["kind"] for r in rows}):
        rest = [r for r in rows if r["kind"] == kind and int(r["tenant"]) not in top]
        out.append({"tenant": "other", "kind": kind, "pending": sum(r["pending"] for r in rest),
                    "running": sum(r["running"] for r in rest)})
    return out


def drops_the_rest(rows, top):
    return [r for r in rows if int(r["tenant"]) in top]


def pending_only(rows, top):
    out = {}
    for r in rows:
        tenant = r["tenant"] if int(r["tenant"]) in top else "other"
        o = out.setdefault((tenant, r["kind"]), {"tenant": tenant, "kind": r["kind"],
                                                 "pending": 0, "running": 0})
        o["pending"] += r["pending"]
        o["running"] += r["running"] if tenant != "other" else 0
    return list(out.values())


def unfolded(rows, top):
    return rows


def one_other_for_all_kinds(rows, top):
    out = {}
    for r in rows:
        key = (r["tenant"], r["kind"]) if int(r["tenant"]) in top else ("other", "noop")
        o = out.setdefault(key, {"tenant": key[0], "kind": key[1], "pending": 0, "running": 0})
        o["pending"] += r["pending"]
        o["running"] += r["running"]
    return list(out.values())


def compares_strings_with_ints(rows, top):
    out = {}
    for r in rows:
        tenant = r["tenant"] if r["tenant"] in top else "other"
        o = out.setdefault((tenant, r["kind"]), {"tenant": tenant, "kind": r["kind"],
                                                 "pending": 0, "running": 0})
        o["pending"] += r["pending"]
        o["running"] += r["running"]
    return list(out.values())


def integer_labels(rows, top):
    return [r | {"tenant": int(r["tenant"])} if r["tenant"] != "other" else r
            for r in fold_reference(rows, top)]


def tenants_without_kinds(rows, top):
    """Folds the kinds of a top tenant into one row."""
    out = {}
    for r in rows:
        key = r["tenant"] if int(r["tenant"]) in top else "other"
        kind = "noop" if key != "other" else r["kind"]
        o = out.setdefault((key, kind), {"tenant": key, "kind": kind, "pending": 0, "running": 0})
        o["pending"] += r["pending"]
        o["running"] += r["running"]
    return list(out.values())


def appends_twice(rows, top):
    """Appends a new other row for every folded tenant instead of adding to one."""
    out = [r for r in rows if int(r["tenant"]) in top]
    out += [r | {"tenant": "other"} for r in rows if int(r["tenant"]) not in top]
    return out


def no_return(rows, top):
    fold_reference(rows, top)


@pytest.mark.parametrize("answer", [fold_reference, fold_with_counters, fold_in_place])
def test_fold_other_right_answers_pass_twice(database_url, answer):
    before = _scratch_schemas("ch08_check")
    assert [ch08.check_fold_other(answer) for _ in range(2)] == [ch08.PASSED] * 2
    assert _scratch_schemas("ch08_check") == before, "a run leaves no schema behind"


@pytest.mark.parametrize(("answer", "message"), [
    (drops_the_rest, "pending 的总数应是 .*不在 top 里的租户的 pending 也要加进 other"),
    (pending_only, "running 的总数应是 .*running 也要加进 other"),
    (unfolded, "不在 top 里的租户也保留了自己的标签"),
    (one_other_for_all_kinds, "每种任务各有一行 other"),
    (compares_strings_with_ints, "top 里是整数，行里的 tenant 是字符串"),
    (integer_labels, "租户标签应是字符串"),
    (tenants_without_kinds, "少了这些行：.*不同种类不能并在一起"),
    (appends_twice, "每个 \\(tenant, kind\\) 只应有一行"),
    (no_return, "忘了 return"),
])
def test_fold_other_wrong_answers_fail_with_their_cause(database_url, answer, message):
    before = _scratch_schemas("ch08_check")
    for _ in range(2):  # the same verdict again
        with pytest.raises(AssertionError, match=message) as failed:
            ch08.check_fold_other(answer)
        assert "第 1.2 节" in str(failed.value) or answer is no_return
    assert _scratch_schemas("ch08_check") == before, "a failed run leaves no schema behind"


# ---------------------------------------------------------------- chapter 09: handle_once

def handle_reference(conn, event, apply):
    with conn.transaction():
        if not outbox.accept(conn, event):
            return False
        apply(event.payload)
        return True


def handle_with_one_exit(conn, event, apply):
    """Right, another shape: one exit, the answer named."""
    with conn.transaction():
        fresh = outbox.accept(conn, event)
        if fresh:
            apply(event.payload)
    return fresh


def handle_by_hand(connection, message, change):
    """Right, another shape: BEGIN/COMMIT/ROLLBACK by hand through psycopg's methods."""
    connection.autocommit = False
    try:
        first = outbox.accept(connection, message)
        if first:
            change(message.payload)
        connection.commit()
        return first
    except BaseException:
        connection.rollback()
        raise
    finally:
        connection.autocommit = True


def always_applies(conn, event, apply):
    apply(event.payload)
    return True


def applies_then_accepts(conn, event, apply):
    apply(event.payload)
    return outbox.accept(conn, event)


def two_commits(conn, event, apply):
    if not outbox.accept(conn, event):
        return False
    apply(event.payload)
    return True


def returns_nothing(conn, event, apply):
    with conn.transaction():
        if not outbox.accept(conn, event):
            return None
        apply(event.payload)
        return None


def swallows_the_error(conn, event, apply):
    with conn.transaction():
        if not outbox.accept(conn, event):
            return False
        try:
            apply(event.payload)
        except Exception:
            return False
        return True


_SEEN: set = set()
_SEEN_PAYLOADS: list = []


def remembers_in_memory(conn, event, apply):
    if event.event_id in _SEEN:
        return False
    apply(event.payload)
    _SEEN.add(event.event_id)
    return True


def dedups_by_payload(conn, event, apply):
    with conn.transaction():
        if event.payload in _SEEN_PAYLOADS or not outbox.accept(conn, event):
            return False
        apply(event.payload)
        _SEEN_PAYLOADS.append(event.payload)
        return True


def leaves_a_transaction_open(conn, event, apply):
    conn.execute("BEGIN")
    if not outbox.accept(conn, event):
        return False
    apply(event.payload)
    return True


@pytest.mark.parametrize("answer", [handle_reference, handle_with_one_exit, handle_by_hand])
def test_handle_once_right_answers_pass_twice(database_url, answer):
    before = _scratch_schemas("ch09_check")
    assert [ch09.check_handle_once(answer) for _ in range(2)] == [ch09.PASSED] * 2
    assert _scratch_schemas("ch09_check") == before, "a run leaves no schema behind"


@pytest.mark.parametrize(("answer", "message"), [
    (always_applies, "应返回 \\[True, False, True, False\\]，实际是 \\[True, True, True, True\\]"),
    (applies_then_accepts, "每个事件只应处理一次：apply 收到的是 \\[1, 1, 2, 1\\]"),
    (two_commits, "apply 失败时事件 id 不能被记下"),
    (returns_nothing, "应返回 True（这次处理了）或 False"),
    (swallows_the_error, "异常要传出去"),
    (remembers_in_memory, "进程内存里的集合在重启后就没了"),
    (dedups_by_payload, "去重的依据是事件 id"),
    (leaves_a_transaction_open, "连接上还留着一个打开的事务"),
])
def test_handle_once_wrong_answers_fail_with_their_cause(database_url, answer, message):
    before = _scratch_schemas("ch09_check")
    for _ in range(2):  # the same verdict again
        _SEEN.clear()
        _SEEN_PAYLOADS.clear()
        with pytest.raises(AssertionError, match=message):
            ch09.check_handle_once(answer)
    assert _scratch_schemas("ch09_check") == before, "a failed run leaves no schema behind"


def test_the_graders_refuse_what_is_not_a_function(database_url):
    with pytest.raises(TypeError, match="fold_other"):
        ch08.check_fold_other("def fold_other(rows, top): ...")
    with pytest.raises(TypeError, match="handle_once"):
        ch09.check_handle_once(None)
