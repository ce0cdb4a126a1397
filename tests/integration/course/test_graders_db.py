"""The graders of chapters 00 and 05 on a real schema: wrong answers fail with their
message, right answers that differ from the reference pass, a second run gives the same
verdict, and a failure leaves the session's clock released."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cachequeue import db
from cachequeue.clock import EPOCH
from cachequeue.course.graders import ch00, ch05
from cachequeue.course.model.lockstep import Step


def clock_is_free(conn) -> bool:
    return conn.execute("SELECT current_setting('cachequeue.now', true)").fetchone()[0] in (None, "")


# ---- chapter 00: advance_both ----------------------------------------------------------

def reference(clock, conn, seconds):
    clock.advance(seconds)
    db.set_clock(conn, clock.datetime())
    return conn.execute("SELECT cq_now()").fetchone()[0]


def returns_the_clock(clock, conn, seconds):
    """Another right answer: returns clock.datetime() after setting it (the same instant)."""
    clock.advance(seconds)
    moment = clock.datetime()
    db.set_clock(conn, moment)
    return moment


def database_first(clock, conn, seconds):
    db.set_clock(conn, clock.datetime() + timedelta(seconds=seconds))
    clock.advance(seconds)
    return conn.execute("SELECT cq_now()").fetchone()[0]


def freezes_before_advancing(clock, conn, seconds):
    db.set_clock(conn, clock.datetime())
    clock.advance(seconds)
    return conn.execute("SELECT cq_now()").fetchone()[0]


def only_the_manual_clock(clock, conn, seconds):
    clock.advance(seconds)
    return conn.execute("SELECT cq_now()").fetchone()[0]


def this_step_only(clock, conn, seconds):
    clock.advance(seconds)
    db.set_clock(conn, EPOCH + timedelta(seconds=seconds))
    return conn.execute("SELECT cq_now()").fetchone()[0]


def releases_again(clock, conn, seconds):
    clock.advance(seconds)
    db.set_clock(conn, clock.datetime())
    now = conn.execute("SELECT cq_now()").fetchone()[0]
    db.set_clock(conn, None)
    return now


def swallows_negative(clock, conn, seconds):
    try:  # noqa: SIM105 (as a learner writes it)
        clock.advance(seconds)
    except ValueError:
        pass
    db.set_clock(conn, clock.datetime())
    return conn.execute("SELECT cq_now()").fetchone()[0]


def no_return(clock, conn, seconds):
    clock.advance(seconds)
    db.set_clock(conn, clock.datetime())


@pytest.mark.parametrize("answer", [reference, returns_the_clock])
def test_ch00_right_answers_pass_twice(conn, answer):
    for _ in range(2):
        assert ch00.check_advance_both(answer, conn) == "检查通过"
        assert clock_is_free(conn)


@pytest.mark.parametrize(("answer", "message"), [
    (database_first, "被拒绝的拨动不应改变数据库时钟"),
    (freezes_before_advancing, "第一次拨动后数据库时钟应在 EPOCH 之后 30 秒，实际是 2026-01-01 00:00:00"),
    (only_the_manual_clock, "第一次拨动后数据库时钟应在 EPOCH 之后 30 秒，实际是 20"),
    (this_step_only, "两次拨动应当累加"),
    (releases_again, "数据库时钟应停在这一刻，而不是继续走"),
    (swallows_negative, "时钟不能倒退"),
    (no_return, "实际是 None"),
])
def test_ch00_wrong_answers_fail_with_their_message_and_release_the_clock(conn, answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch00.check_advance_both(answer, conn)
        assert clock_is_free(conn), "a failed check leaves no frozen clock behind"


# ---- chapter 05: exposing_sequence -----------------------------------------------------

def exposing_reference():
    return [Step("submit", (1, "always_fail", 3, None)), Step("claim", (30.0,)),
            Step("fail", (0, False)), Step("advance", (2.0,)), Step("claim", (30.0,))]


def exposing_later_attempt():
    """Another right answer: the second retry, after 2 s and then 4 s of backoff, as a tuple."""
    return (Step("submit", (2, "summarise", 5, "k")), Step("claim", (10.0,)),
            Step("fail", (0, False)), Step("advance", (2.0,)), Step("claim", (10.0,)),
            Step("fail", (1, False)), Step("advance", (1.5,)), Step("advance", (2.5,)),
            Step("claim", (10.0,)))


def too_early():
    return exposing_reference()[:3] + [Step("advance", (1.9,)), Step("claim", (30.0,))]


def too_late():
    return exposing_reference()[:3] + [Step("advance", (3.0,)), Step("claim", (30.0,))]


def permanent():
    return [Step("submit", (1, "always_fail", 3, None)), Step("claim", (30.0,)),
            Step("fail", (0, True)), Step("advance", (2.0,)), Step("claim", (30.0,))]


def first_claim_only():
    return [Step("submit", (1, "always_fail", 3, None)), Step("claim", (30.0,))]


def reclaim():
    """Section 5's lease expiry: no retry at all."""
    return [Step("submit", (1, "summarise", 3, None)), Step("claim", (30.0,)),
            Step("advance", (30.0,)), Step("claim", (30.0,)), Step("finish", (0,)),
            Step("finish", (1,)), Step("finish", (1,))]


def no_advance():
    return exposing_reference()[:3] + [Step("claim", (30.0,))]


def one_attempt():
    return [Step("submit", (1, "always_fail", 1, None)), *exposing_reference()[1:]]


def no_claim_after():
    return exposing_reference()[:4]


def manual_retry():
    """Another right answer (docs/instructor.md): an audited retry puts run_after at now."""
    return [Step("submit", (1, "always_fail", 1, None)), Step("claim", (30.0,)),
            Step("fail", (0, False)), Step("retry", (1, 0)), Step("claim", (30.0,))]


def not_steps():
    return [("submit", (1, "always_fail", 3, None))]


@pytest.mark.parametrize("answer", [exposing_reference, exposing_later_attempt, manual_retry])
def test_ch05_right_answers_pass_twice(conn, answer):
    for _ in range(2):
        difference = ch05.check_exposing_sequence(answer, conn)
        assert difference["step"].startswith("claim(") and difference["model"] is None
        assert clock_is_free(conn)


@pytest.mark.parametrize(("answer", "message"), [
    (too_early, "要在重试恰好到期的那一刻领取"),
    (too_late, "要在重试恰好到期的那一刻领取"),
    (permanent, "序列里要先有一次可重试的失败"),
    (first_claim_only, "序列里要先有一次可重试的失败"),
    (reclaim, "序列里要先有一次可重试的失败"),
    (no_advance, "要在重试恰好到期的那一刻领取"),
    (one_attempt, "要在重试恰好到期的那一刻领取"),
    (no_claim_after, "序列里要先有一次可重试的失败.*然后再领取"),
    (not_steps, "应当返回一串 Step"),
    (lambda: None, "应当返回一串 Step（列表），实际是 NoneType"),
    (list, "返回了空列表"),
])
def test_ch05_wrong_answers_fail_with_their_message(conn, answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch05.check_exposing_sequence(answer, conn)
        assert clock_is_free(conn)
