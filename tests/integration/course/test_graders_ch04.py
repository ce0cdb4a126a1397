"""Chapter 04's grader (`course.graders.ch04`): right answers pass, every run; typical
wrong ones fail with the message that names their cause."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from cachequeue import db
from cachequeue.course.graders import ch04
from cachequeue.queue import single_pass
from cachequeue.queue.retry import PermanentError, RetryableError


def always_fail(payload):
    raise RetryableError(f"document {payload['document_id']}: the vendor keeps failing")


def summarise(payload):
    return {"summary": f"document {payload['document_id']}"}


def run_rounds(conn, handlers, policy, clock, rounds):
    outcomes = Counter()
    for _ in range(rounds):
        outcomes += single_pass.drain(conn, handlers, policy=policy, worker="w1")
        clock.advance(policy.cap)
        db.set_clock(conn, clock.datetime())
    return outcomes


def timeout(payload):
    """Right: any exception but PermanentError is retryable (chapter 04 §1)."""
    raise TimeoutError("vendor did not answer")


def other_summary(document):
    return {"text": "ok", "document": document["document_id"]}


def rounds_with_update(connection, table, retry, manual, rounds):
    """Right, other names: Counter.update, set_clock before the first round too."""
    total = Counter()
    db.set_clock(connection, manual.datetime())
    for _round in range(rounds):
        total.update(single_pass.drain(connection, table, policy=retry, worker="me"))
        manual.advance(retry.cap)
        db.set_clock(connection, manual.datetime())
    return dict(total)


@pytest.mark.parametrize("answer", [(always_fail, summarise, run_rounds),
                                    (timeout, other_summary, rounds_with_update)],
                         ids=["reference", "timeout-and-other-names"])
def test_right_answers_pass_every_run(database_url, answer):
    assert ch04.check_run_rounds(*answer) == ch04.PASSED
    assert ch04.check_run_rounds(*answer) == ch04.PASSED, "the same verdict on a second run"


def no_database_clock(conn, handlers, policy, clock, rounds):
    outcomes = Counter()
    for _ in range(rounds):
        outcomes += single_pass.drain(conn, handlers, policy=policy, worker="w1")
        clock.advance(policy.cap)
    return outcomes


def overwrites(conn, handlers, policy, clock, rounds):
    for _ in range(rounds):
        outcomes = single_pass.drain(conn, handlers, policy=policy, worker="w1")
        clock.advance(policy.cap)
        db.set_clock(conn, clock.datetime())
    return outcomes


def forgets_return(conn, handlers, policy, clock, rounds):
    run_rounds(conn, handlers, policy, clock, rounds)


def run_once_per_round(conn, handlers, policy, clock, rounds):
    outcomes = Counter()
    for _ in range(rounds):
        outcome = single_pass.run_once(conn, handlers, policy=policy, worker="w1")
        if outcome is not None:
            outcomes[outcome] += 1
        clock.advance(policy.cap)
        db.set_clock(conn, clock.datetime())
    return outcomes


def until_quiet(conn, handlers, policy, clock, rounds):
    """Wrong: stops when a round finds nothing, not after `rounds` rounds."""
    outcomes = Counter()
    while True:
        done = single_pass.drain(conn, handlers, policy=policy, worker="w1")
        clock.advance(policy.cap)
        db.set_clock(conn, clock.datetime())
        if not done:
            return outcomes
        outcomes += done


def permanent(payload):
    raise PermanentError("the vendor keeps failing")


def swallows(payload):
    try:
        raise RetryableError("the vendor keeps failing")
    except RetryableError:
        return {"error": "the vendor keeps failing"}


def reads_a_missing_field(payload):
    return {"summary": payload["text"][:100]}


def not_written(payload):
    raise NotImplementedError


WRONG = {
    "always_fail not written": ((not_written, summarise, run_rounds), "还是学生版的 raise NotImplementedError"),
    "no db.set_clock": ((always_fail, summarise, no_database_clock), "数据库时钟前进了吗？"),
    "total overwritten": ((always_fail, summarise, overwrites), "total += ..."),
    "no return": ((always_fail, summarise, forgets_return), "run_rounds 没有返回值"),
    "run_once instead of drain": ((always_fail, summarise, run_once_per_round), "single_pass.drain"),
    "unbounded loop": ((always_fail, summarise, until_quiet), "恰好运行 rounds 轮"),
    "PermanentError": ((permanent, summarise, run_rounds), "永久错误一次就失败"),
    "error swallowed": ((swallows, summarise, run_rounds), "每次都要抛出异常"),
    "summarise raises": ((always_fail, reads_a_missing_field, run_rounds), "KeyError"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_answers_fail_with_their_cause(database_url, name):
    answer, cause = WRONG[name]
    for _ in range(2):  # the same verdict on a second run
        with pytest.raises(AssertionError) as failed:
            ch04.check_run_rounds(*answer)
        assert cause in str(failed.value), str(failed.value)


def test_the_learners_own_error_propagates_and_nothing_is_left(database_url, monkeypatch):
    fixed = uuid.UUID(int=0xC0FFEE)
    monkeypatch.setattr(uuid, "uuid4", lambda: fixed)

    def stub(conn, handlers, policy, clock, rounds):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        ch04.check_run_rounds(always_fail, summarise, stub)
    private = db.schema_name(f"grade04_{fixed.hex[:12]}")
    with db.connect() as conn:
        left = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", [private]).fetchone()[0]
    assert left == 0, "the private schema is dropped, also when the learner's code raised"


def test_refuses_what_is_not_a_function():
    with pytest.raises(TypeError, match="run_rounds"):
        ch04.check_run_rounds(always_fail, summarise, None)
