"""The custom variant (the lab of chapter 06): a claim and a finish given as SQL text are
checked before anything runs, written to the run's folder and read back from it."""

from __future__ import annotations

import pytest

from cachequeue.verify import variants

CLAIM = """
UPDATE jobs
SET state = 'running', attempts = attempts + 1, lease_token = gen_random_uuid(),
    locked_until = cq_now() + %(lease)s * interval '1 second', locked_by = %(worker)s
WHERE id IN (SELECT id FROM jobs WHERE state = 'pending' AND run_after <= cq_now()
             ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING *;
"""
FINISH = """
-- the lease check: this attempt's token, still unexpired
UPDATE jobs SET state = 'done', finished_at = cq_now(),
    lease_token = NULL, locked_until = NULL, locked_by = NULL
WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running'
  AND locked_until > cq_now()
RETURNING id, tenant_id
"""


def test_two_good_statements_pass_stripped_of_their_final_semicolon():
    claim, finish = variants.check_custom(CLAIM, FINISH)
    assert claim.endswith("RETURNING *") and finish == FINISH.strip()


@pytest.mark.parametrize(("claim", "finish", "error", "words"), [
    (None, FINISH, TypeError, "claim statement must be SQL text (a str), got NoneType"),
    (CLAIM, "   ;  ", ValueError, "finish statement is empty"),
    (CLAIM, "-- only a comment", ValueError, "finish statement is empty"),
    ("SELECT id FROM jobs WHERE id = %(limit)s AND %(lease)s > 0 RETURNING id", FINISH,
     ValueError, "must be an UPDATE of jobs (or WITH ... UPDATE), it starts with 'SELECT'"),
    (CLAIM, FINISH.replace("RETURNING id, tenant_id", ""), ValueError,
     "finish statement needs a RETURNING clause"),
    (CLAIM, FINISH + "; DELETE FROM jobs", ValueError, "ONE statement"),
    (CLAIM.replace("%(lease)s", "30"), FINISH, ValueError,
     "claim statement must use the parameters ['lease']"),
    (CLAIM, FINISH.replace("%(lease_token)s", "%(token)s"), ValueError,
     "finish statement uses unknown parameters ['token']; it may use ['job_id', 'lease_token', "
     "'output']"),
    (CLAIM, FINISH + " /* the learner's statement */", ValueError, "may not contain"),
])
def test_a_bad_statement_is_refused_with_what_is_wrong(claim, finish, error, words):
    with pytest.raises(error) as caught:
        variants.check_custom(claim, finish)
    assert words in str(caught.value)


def test_a_semicolon_in_a_literal_or_a_comment_is_no_second_statement():
    finish = FINISH.replace("RETURNING", "AND kind <> 'a;b' -- c;d\nRETURNING")
    assert variants.check_custom(CLAIM, finish)[1] == finish.strip()


def test_written_then_loaded_from_the_run_folder(tmp_path):
    path = variants.write_custom(tmp_path / "run", CLAIM, FINISH)
    assert path == tmp_path / "run" / variants.CUSTOM_FILE
    assert variants.load_custom(tmp_path / "run") == variants.check_custom(CLAIM, FINISH)


def test_nothing_is_written_for_a_bad_statement(tmp_path):
    with pytest.raises(ValueError):
        variants.write_custom(tmp_path, CLAIM, "DELETE FROM jobs RETURNING id")
    assert not (tmp_path / variants.CUSTOM_FILE).exists()


def test_loading_without_the_file_says_how_to_write_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="write_custom"):
        variants.load_custom(tmp_path)
    with pytest.raises(ValueError, match="needs the run's folder"):
        variants.install(variants.CUSTOM)


def test_a_hand_edited_file_is_checked_again(tmp_path):
    (tmp_path / variants.CUSTOM_FILE).write_text(f"-- name: claim\n-- a claim\n{CLAIM}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"exactly the queries claim and finish, it has \['claim'\]"):
        variants.load_custom(tmp_path)


def test_the_worker_clock_refuses_what_is_not_a_clock_offset():
    with pytest.raises(TypeError, match="skew"):
        variants.set_worker_clock("3600")
    with pytest.raises(ValueError, match="skew"):
        variants.set_worker_clock(float("nan"))
    with pytest.raises(ValueError, match="within a day"):
        variants.set_worker_clock(10 ** 6)
    variants.set_worker_clock(-2.5)
    assert variants._worker_clock["skew"] == -2.5
    variants.set_worker_clock(0.0)
