"""Chapter 06's exercise grader (`graders.ch06.check_send_receipt`) on a real schema:
realistic wrong answers fail with a message naming their cause and section, right answers
that differ from the reference pass, a second run gives the same verdict, and nothing is
left behind (no grading schema, no setting on the caller's connection)."""

from __future__ import annotations

import psycopg
import pytest

from cachequeue import db
from cachequeue.course.graders import ch06


def reference(conn, *, order, job_id):
    row = conn.execute(
        "INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)"
        " ON CONFLICT (business_key) DO NOTHING RETURNING business_key",
        [f"receipt:{order}", job_id]).fetchone()
    return row is not None


# ---- right answers that differ from the reference ----------------------------------------

def by_rowcount(conn, *, order, job_id):
    cur = conn.execute("INSERT INTO receipts AS r (job_id, business_key) VALUES (%(job)s, %(key)s)"
                       " ON CONFLICT DO NOTHING", {"job": job_id, "key": "receipt:" + order})
    return cur.rowcount == 1


def catches_the_violation(conn, *, order, job_id):
    """A plain INSERT on an autocommit connection, the duplicate caught: right, and one statement."""
    try:
        conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)",
                     [f"receipt:{order}", job_id])
    except psycopg.errors.UniqueViolation:
        return False
    return True


def reads_first_but_lets_the_constraint_decide(conn, *, order, job_id):
    """A needless SELECT first; the INSERT ... ON CONFLICT ... RETURNING still decides."""
    conn.execute("SELECT 1 FROM receipts WHERE business_key = %s", [f"receipt:{order}"])
    inserted = conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s) "
                            "ON CONFLICT (business_key) DO NOTHING RETURNING 1",
                            [f"receipt:{order}", job_id]).fetchall()
    return bool(inserted)


# ---- wrong answers -----------------------------------------------------------------------

def plain_insert(conn, *, order, job_id):
    conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)",
                 [f"receipt:{order}", job_id])
    return True


def always_true(conn, *, order, job_id):
    conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)"
                 " ON CONFLICT DO NOTHING", [f"receipt:{order}", job_id])
    return True


def order_only_key(conn, *, order, job_id):
    row = conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)"
                       " ON CONFLICT DO NOTHING RETURNING 1", [order, job_id]).fetchone()
    return row is not None


def forgets_return(conn, *, order, job_id):
    conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)"
                 " ON CONFLICT DO NOTHING", [f"receipt:{order}", job_id])


def returns_the_row(conn, *, order, job_id):
    return conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)"
                        " ON CONFLICT DO NOTHING RETURNING business_key",
                        [f"receipt:{order}", job_id]).fetchone()


def check_then_insert(conn, *, order, job_id):
    key = f"receipt:{order}"
    if conn.execute("SELECT 1 FROM receipts WHERE business_key = %s", [key]).fetchone():
        return False
    conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)", [key, job_id])
    return True


def check_then_insert_for_update(conn, *, order, job_id):
    key = f"receipt:{order}"
    with conn.transaction():
        if conn.execute("SELECT 1 FROM receipts WHERE business_key = %s FOR UPDATE",
                        [key]).fetchone():
            return False
        conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)", [key, job_id])
    return True


def check_then_upsert_always_true(conn, *, order, job_id):
    key = f"receipt:{order}"
    if conn.execute("SELECT 1 FROM receipts WHERE business_key = %s", [key]).fetchone():
        return False
    conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, %s)"
                 " ON CONFLICT DO NOTHING", [key, job_id])
    return True


def wrong_job(conn, *, order, job_id):
    row = conn.execute("INSERT INTO receipts (business_key, job_id) VALUES (%s, 1)"
                       " ON CONFLICT DO NOTHING RETURNING 1", [f"receipt:{order}"]).fetchone()
    return row is not None


WRONG = {
    plain_insert: "撞上了唯一约束",
    always_true: "不能总是返回 True",
    order_only_key: "receipt:<订单号>",
    forgets_return: "忘了 return",
    returns_the_row: "应返回 True 或 False",
    check_then_insert: "两条语句之间有缝隙",
    check_then_insert_for_update: "两条语句之间有缝隙",
    check_then_upsert_always_true: "恰好有一次发出收据",
    wrong_job: "参数 job_id",
}


def grading_schemas(conn) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'grade06%'").fetchall()]


@pytest.mark.parametrize("answer", [reference, by_rowcount, catches_the_violation,
                                    reads_first_but_lets_the_constraint_decide],
                         ids=lambda f: f.__name__)
def test_right_answers_pass_every_time(answer):
    assert ch06.check_send_receipt(answer) == ch06.PASSED
    assert ch06.check_send_receipt(answer) == ch06.PASSED  # the same verdict when re-run
    with db.connect() as conn:
        assert grading_schemas(conn) == []


@pytest.mark.parametrize("answer", list(WRONG), ids=lambda f: f.__name__)
def test_wrong_answers_fail_with_their_cause_and_section(answer):
    for _ in range(2):  # the same verdict when re-run
        with pytest.raises(AssertionError) as failed:
            ch06.check_send_receipt(answer)
        message = str(failed.value)
        assert WRONG[answer] in message, message
        assert "节" in message, message
    with db.connect() as conn:
        assert grading_schemas(conn) == []


def test_not_a_function_is_refused_before_anything_is_built():
    with pytest.raises(TypeError):
        ch06.check_send_receipt("INSERT INTO receipts ...")
