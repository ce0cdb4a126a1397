"""Chapter 06's lab check as a grader: the learner's claim and finish, judged by
`leaselab.run` as the check cell runs it. Each realistic wrong answer fails on the first
seed with a Chinese diagnosis naming its cause (and on other seeds too, without any fault:
the prober, not luck, catches it); right answers that differ from the reference pass."""

from __future__ import annotations

import pytest

from cachequeue.course.labs import leaselab
from cachequeue.embedded import Server

pytestmark = pytest.mark.private_server

# The reference answer (notebook 06, cell 80).
CLAIM = """
    UPDATE jobs
    SET state = 'running', attempts = attempts + 1, lease_token = gen_random_uuid(),
        locked_until = cq_now() + %(lease)s * interval '1 second', locked_by = %(worker)s
    WHERE id IN (SELECT id
                 FROM jobs
                 WHERE state = 'pending' AND run_after <= cq_now()
                    OR state = 'running' AND locked_until <= cq_now()
                       AND attempts - handbacks < max_attempts
                 ORDER BY id
                 LIMIT %(limit)s
                 FOR UPDATE SKIP LOCKED)
    RETURNING *
"""
FINISH = """
    UPDATE jobs
    SET state = 'done', finished_at = cq_now(),
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running'
      AND locked_until > cq_now()
    RETURNING id, tenant_id
"""

# Right answers that differ from the reference: a CTE that locks its candidates and a join,
# a plain FOR UPDATE (it waits for the row instead of skipping it, and re-checks the row's
# state once the lock is its own: correct, only slower), a finish whose predicates come in
# another order.
CTE_CLAIM = """
    WITH picked AS (
        SELECT id FROM jobs
        WHERE (state = 'running' AND locked_until <= cq_now()
               AND attempts - handbacks < max_attempts)
           OR (state = 'pending' AND run_after <= cq_now())
        ORDER BY run_after, id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs AS j
    SET state = 'running', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        locked_until = cq_now() + make_interval(secs => %(lease)s), locked_by = %(worker)s
    FROM picked
    WHERE j.id = picked.id
    RETURNING j.*
"""
WAITING_CLAIM = CLAIM.replace("FOR UPDATE SKIP LOCKED", "FOR UPDATE")
REORDERED_FINISH = """
    UPDATE jobs
    SET state = 'done', finished_at = cq_now(), lease_token = NULL, locked_until = NULL,
        locked_by = NULL
    WHERE locked_until > cq_now() AND state = 'running' AND id = %(job_id)s
      AND lease_token = %(lease_token)s
    RETURNING id, tenant_id
"""

# Wrong answers: (claim, finish, words the diagnosis must contain).
WRONG = {
    "token-only finish (no lease expiry)": (
        CLAIM, FINISH.replace("\n      AND locked_until > cq_now()", ""), "locked_until > cq_now()"),
    "NULL-tolerant token, no state": (
        CLAIM, FINISH.replace("lease_token = %(lease_token)s AND state = 'running'\n"
                              "      AND locked_until > cq_now()",
                              "coalesce(lease_token, %(lease_token)s) = %(lease_token)s\n"
                              "      AND coalesce(locked_until, 'infinity') > cq_now()"),
        "state = 'running'"),
    "forgotten cap": (
        CLAIM.replace("\n                       AND attempts - handbacks < max_attempts", ""),
        FINISH, "attempts - handbacks < max_attempts"),
    "claim without row locks": (
        CLAIM.replace("\n                 FOR UPDATE SKIP LOCKED", ""), FINISH,
        "FOR UPDATE SKIP LOCKED"),
    "retry before its backoff": (
        CLAIM.replace("state = 'pending' AND run_after <= cq_now()", "state = 'pending'"),
        FINISH, "run_after <= cq_now()"),
}
RIGHT = {"reference": (CLAIM, FINISH), "CTE and join": (CTE_CLAIM, REORDERED_FINISH),
         "plain FOR UPDATE": (WAITING_CLAIM, FINISH)}


@pytest.fixture(scope="module")
def server():
    with Server.private() as private:
        yield private


def _lab(server, tmp_path, claim, finish, seed, **kw):
    return leaselab.run(claim, finish, seed=seed, folder=tmp_path, server=server, **kw)


def test_the_wrong_answers_really_differ_from_the_reference():
    for claim, finish, _ in WRONG.values():
        assert (claim, finish) != (CLAIM, FINISH)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_answer_fails_on_the_first_seed_with_its_cause(name, server, tmp_path):
    claim, finish, words = WRONG[name]
    result = _lab(server, tmp_path, claim, finish, seed=1)  # as the check cell runs it
    message = leaselab.diagnosis(result)
    assert message is not None and "依据：第" in message, result["violations"][:2]
    assert words in message, message


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_answer_fails_on_other_seeds_without_any_fault(name, server, tmp_path):
    claim, finish, words = WRONG[name]
    for seed in (2, 3):
        result = _lab(server, tmp_path, claim, finish, seed=seed, faults=(), jobs=4, workers=2)
        message = leaselab.diagnosis(result)
        assert message is not None and words in message, (seed, message)


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_answers_pass(name, server, tmp_path):
    claim, finish = RIGHT[name]
    result = _lab(server, tmp_path, claim, finish, seed=1)
    assert leaselab.diagnosis(result) is None, result["violations"][:2]
    assert set(result["without_opportunity"]) <= {"ambiguous-as-failure", "false-success", "reclaim"}
