"""The lockstep comparison catches each boundary mutant on a sequence that reaches its boundary."""

from __future__ import annotations

from cachequeue.course.model import lockstep, mutants
from cachequeue.course.model.lockstep import Step

RECLAIM_LATE = [Step("submit", (1, "noop", 3, None)), Step("claim", (30.0,)),
                Step("advance", (30.0,)), Step("finish", (0,))]
RETRY_ON_TIME = [Step("submit", (1, "always_fail", 3, None)), Step("claim", (30.0,)),
                 Step("fail", (0, False)), Step("advance", (2.0,)), Step("claim", (30.0,))]


def test_the_trace_keeps_the_sequence_it_was_given(conn):
    trace = lockstep.replay(conn, RETRY_ON_TIME)
    assert trace.sequence == RETRY_ON_TIME and trace.agree


def test_late_expiry_is_caught_at_the_late_finish(conn):
    assert lockstep.replay(conn, RECLAIM_LATE).agree
    wrong = lockstep.replay(conn, RECLAIM_LATE, model_class=mutants.LateExpiryModel)
    assert wrong.first_difference()["step"] == "finish(0)"


def test_retry_too_late_is_caught_at_the_claim_on_run_after_and_not_one_second_later(conn):
    wrong = lockstep.replay(conn, RETRY_ON_TIME, model_class=mutants.RetryTooLateModel)
    assert wrong.first_difference() == {"step": "claim(30.0)", "model": None,
                                        "postgres": wrong.rows[-1]["postgres"], "same": False}
    later = RETRY_ON_TIME[:3] + [Step("advance", (3.0,)), Step("claim", (30.0,))]
    assert lockstep.replay(conn, later, model_class=mutants.RetryTooLateModel).agree
