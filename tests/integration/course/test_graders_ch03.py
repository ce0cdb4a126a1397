"""Chapter 03's grader (`course.graders.ch03`): right answers pass, every run; typical
wrong ones fail with the message that names their cause."""

from __future__ import annotations

import uuid

import pytest

from cachequeue import db
from cachequeue.course.graders import ch03
from cachequeue.course.probes import minimal

SET = """SET state = 'running', attempts = attempts + 1, lease_token = gen_random_uuid(),
             locked_by = %(worker)s, locked_until = cq_now() + interval '30 seconds'"""


def _one(sql):
    def claim_one(conn, worker):
        row = conn.execute(sql, {"worker": worker}).fetchone()
        return None if row is None else row[0]
    return claim_one


def _subquery(where="state = 'pending' AND run_after <= cq_now()", order="ORDER BY run_after, id",
              lock="FOR UPDATE SKIP LOCKED", set_=SET, limit="LIMIT 1"):
    return _one(f"UPDATE jobs {set_} WHERE id = (SELECT id FROM jobs WHERE {where} {order} "
                f"{limit} {lock}) RETURNING id")


REFERENCE = _subquery()

# A different right shape: a CTE joined in UPDATE ... FROM, other names, make_interval.
CTE = _one("""WITH next_job AS (
                  SELECT j.id FROM jobs AS j
                  WHERE j.run_after <= cq_now() AND j.state = 'pending'
                  ORDER BY j.run_after ASC, j.id ASC
                  FOR UPDATE SKIP LOCKED
                  LIMIT 1)
              UPDATE jobs SET state = 'running', attempts = jobs.attempts + 1,
                     lease_token = gen_random_uuid(), locked_by = %(worker)s,
                     locked_until = cq_now() + make_interval(secs => 30)
              FROM next_job WHERE jobs.id = next_job.id
              RETURNING jobs.id""")


def through_cursor(connection, who):
    """Right: the minimal claim of chapter 03 §4, through a cursor, with other names."""
    with connection.cursor() as cur:
        cur.execute(minimal.query("minimal_claim").sql, {"worker": who, "lease": 30})
        found = cur.fetchone()
    return found[0] if found else None


def two_steps(conn, worker):
    row = conn.execute("SELECT id FROM jobs WHERE state = 'pending' AND run_after <= cq_now() "
                       "ORDER BY run_after, id LIMIT 1 FOR UPDATE SKIP LOCKED").fetchone()
    if row is None:
        return None
    conn.execute(f"UPDATE jobs {SET} WHERE id = %(id)s", {"worker": worker, "id": row[0]})
    return row[0]


def returns_row(conn, worker):
    return conn.execute(f"UPDATE jobs {SET} WHERE id = (SELECT id FROM jobs WHERE state = 'pending' "
                        "AND run_after <= cq_now() ORDER BY run_after, id LIMIT 1 "
                        "FOR UPDATE SKIP LOCKED) RETURNING id", {"worker": worker}).fetchone()


@pytest.mark.parametrize("answer", [REFERENCE, CTE, through_cursor], ids=["reference", "cte", "cursor"])
def test_right_answers_pass_every_run(database_url, answer):
    assert ch03.check_claim_one(answer) == ch03.PASSED
    assert ch03.check_claim_one(answer) == ch03.PASSED, "the same verdict on a second run"


WRONG = {
    "no SKIP LOCKED": (_subquery(lock="FOR UPDATE"), "FOR UPDATE SKIP LOCKED"),
    "no lock at all": (_subquery(lock=""), "FOR UPDATE SKIP LOCKED"),
    "two statements": (two_steps, "实际发出了 2 条"),
    "no ORDER BY": (_subquery(order=""), "ORDER BY run_after, id"),
    "ORDER BY id": (_subquery(order="ORDER BY id"), "ORDER BY run_after, id"),
    "no run_after filter": (_subquery(where="state = 'pending'"), "run_after <= cq_now()"),
    "run_after <= now()": (_subquery(where="state = 'pending' AND run_after <= now()"),
                           "run_after <= cq_now()"),
    "no state filter": (_subquery(where="run_after <= cq_now()"), "state = 'pending'"),
    "lease from now()": (_subquery(set_=SET.replace("cq_now() + interval", "now() + interval")),
                         "租约要从 cq_now() 算起"),
    "attempts unchanged": (_subquery(set_=SET.replace("attempts = attempts + 1", "attempts = 1 - 1")),
                           "attempts = attempts + 1"),
    "no new token": (_subquery(set_=SET.replace("lease_token = gen_random_uuid(),", "")),
                     "lease_token = gen_random_uuid()"),
    "no LIMIT": (_one(f"UPDATE jobs {SET} WHERE id IN (SELECT id FROM jobs WHERE state = 'pending' "
                      "AND run_after <= cq_now() ORDER BY run_after, id FOR UPDATE SKIP LOCKED) "
                      "RETURNING id"), "LIMIT 1"),
    "returns the row": (returns_row, "row[0]"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_answers_fail_with_their_cause(database_url, name):
    answer, cause = WRONG[name]
    for _ in range(2):  # the same verdict on a second run
        with pytest.raises(AssertionError) as failed:
            ch03.check_claim_one(answer)
        assert cause in str(failed.value), str(failed.value)


def test_the_learners_own_error_propagates_and_nothing_is_left(database_url, monkeypatch):
    fixed = uuid.UUID(int=0xC0FFEE)
    monkeypatch.setattr(uuid, "uuid4", lambda: fixed)

    def stub(conn, worker):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        ch03.check_claim_one(stub)
    private = db.schema_name(f"grade03_{fixed.hex[:12]}")
    with db.connect() as conn:
        left = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", [private]).fetchone()[0]
    assert left == 0, "the private schema is dropped, also when the learner's code raised"


def test_refuses_what_is_not_a_function():
    with pytest.raises(TypeError, match="claim_one"):
        ch03.check_claim_one("UPDATE jobs ...")
