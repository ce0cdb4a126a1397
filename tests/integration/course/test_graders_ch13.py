"""Chapter 13's grader (`course.graders.ch13`): right answers pass, every run; typical wrong
ones, above all an acknowledgement sent before the fenced write, fail with their cause."""

from __future__ import annotations

import pytest

from cachequeue.course.graders import ch13
from cachequeue.shared import fenced_write


def reference(conn, queue, delivery, handler, *, max_deliveries=3):
    if delivery.deliveries > max_deliveries:
        queue.dead_letter(delivery, f"delivered {delivery.deliveries} times")
        return "dead"
    result = handler(delivery.payload)
    if not fenced_write(conn, f"summary:{delivery.id}", delivery.deliveries, result):
        return "stale"
    queue.ack(delivery.id)
    return "done"


def other_shape(connection, q, d, run, *, max_deliveries=3):
    """Right, another shape: the accepted flag in a variable, one return at the end."""
    verdict = "dead"
    if not d.deliveries > max_deliveries:
        accepted = fenced_write(connection, "summary:" + d.id, d.deliveries, run(d.payload))
        verdict = "done" if accepted else "stale"
        if accepted:
            q.ack(d.id)
    else:
        q.dead_letter(d, "too many deliveries")
    return verdict


def ack_before_write(conn, queue, delivery, handler, *, max_deliveries=3):
    """The review's trace: acknowledged after the handler, before the fenced write."""
    if delivery.deliveries > max_deliveries:
        queue.dead_letter(delivery, "too many")
        return "dead"
    result = handler(delivery.payload)
    queue.ack(delivery.id)
    ok = fenced_write(conn, f"summary:{delivery.id}", delivery.deliveries, result)
    return "done" if ok else "stale"


def ack_first(conn, queue, delivery, handler, *, max_deliveries=3):
    """Acknowledges on receipt, before the handler runs."""
    if delivery.deliveries > max_deliveries:
        queue.dead_letter(delivery, "too many")
        return "dead"
    queue.ack(delivery.id)
    result = handler(delivery.payload)
    ok = fenced_write(conn, f"summary:{delivery.id}", delivery.deliveries, result)
    return "done" if ok else "stale"


def ack_even_when_stale(conn, queue, delivery, handler, *, max_deliveries=3):
    """Writes first, then acknowledges whatever the write said."""
    if delivery.deliveries > max_deliveries:
        queue.dead_letter(delivery, "too many")
        return "dead"
    ok = fenced_write(conn, f"summary:{delivery.id}", delivery.deliveries,
                      handler(delivery.payload))
    queue.ack(delivery.id)
    return "done" if ok else "stale"


def cap_off_by_one(conn, queue, delivery, handler, *, max_deliveries=3):
    if delivery.deliveries >= max_deliveries:
        queue.dead_letter(delivery, "too many")
        return "dead"
    return reference(conn, queue, delivery, handler, max_deliveries=max_deliveries)


def resource_by_document(conn, queue, delivery, handler, *, max_deliveries=3):
    if delivery.deliveries > max_deliveries:
        queue.dead_letter(delivery, "too many")
        return "dead"
    result = handler(delivery.payload)
    if not fenced_write(conn, f"summary:{delivery.payload['document']}", delivery.deliveries,
                        result):
        return "stale"
    queue.ack(delivery.id)
    return "done"


def handler_before_cap(conn, queue, delivery, handler, *, max_deliveries=3):
    result = handler(delivery.payload)
    if delivery.deliveries > max_deliveries:
        queue.dead_letter(delivery, "too many")
        return "dead"
    if not fenced_write(conn, f"summary:{delivery.id}", delivery.deliveries, result):
        return "stale"
    queue.ack(delivery.id)
    return "done"


def student(conn, queue, delivery, handler, *, max_deliveries=3):
    raise NotImplementedError


@pytest.mark.parametrize("answer", [reference, other_shape], ids=["reference", "other-shape"])
def test_right_answers_pass_every_run(database_url, keyspace, answer):
    client, prefix = keyspace
    assert ch13.check_handle(answer, client, prefix) == ch13.PASSED
    assert ch13.check_handle(answer, client, prefix) == ch13.PASSED, "the same verdict again"
    assert list(client.scan_iter(match=prefix + "*")) == [], "the grader's streams are gone"


@pytest.mark.parametrize("answer, message", [
    (ack_before_write, "先确认、后写入"),
    (ack_first, "先确认、后写入"),
    (ack_even_when_stale, "写入被拒绝，却仍然确认了"),
    (cap_off_by_one, "没有超过上限 3"),
    (resource_by_document, "防护令牌写在 summary:<消息 id>"),
    (handler_before_cap, "不应再调用处理函数"),
    (student, "学生版"),
], ids=lambda value: getattr(value, "__name__", "message"))
def test_wrong_answers_fail_with_their_cause_every_run(database_url, keyspace, answer, message):
    client, prefix = keyspace
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch13.check_handle(answer, client, prefix)
    assert list(client.scan_iter(match=prefix + "*")) == [], "nothing left behind on failure"


def test_bad_arguments_are_refused(database_url, keyspace):
    client, prefix = keyspace
    with pytest.raises(TypeError):
        ch13.check_handle("handle", client, prefix)
    with pytest.raises(TypeError):
        ch13.check_handle(reference, "redis", prefix)
    with pytest.raises(ValueError):
        ch13.check_handle(reference, client, "not-a-namespace")
