"""Chapter 14's grader: the monitoring query that lists the sessions holding the horizon.
Each wrong answer is one a learner writes; each is refused with the cause and the section."""

from __future__ import annotations

import pytest

from cachequeue.course.graders import ch14

pytestmark = pytest.mark.private_server

REFERENCE = """
SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
ORDER BY greatest(age(backend_xmin), age(backend_xid)) DESC
"""

# Another right answer: the horizon of each backend as one value, its age, a LIMIT-free CTE.
ALTERNATIVE = """
WITH held AS (
    SELECT pid, age(coalesce(backend_xmin, backend_xid)) AS xid_age
    FROM pg_stat_activity
    WHERE pid <> pg_backend_pid() AND coalesce(backend_xmin, backend_xid) IS NOT NULL
)
SELECT pid, xid_age FROM held ORDER BY xid_age DESC
"""

# Two more right answers of other shapes: the raw xid as a number (a fresh server, no
# wraparound), oldest first; and a filter on state with the ages compared in a CASE.
MORE_RIGHT = {
    "xid as number": """
SELECT pid FROM pg_stat_activity
WHERE pid IS DISTINCT FROM pg_backend_pid() AND coalesce(backend_xmin, backend_xid) IS NOT NULL
ORDER BY coalesce(backend_xmin, backend_xid)::text::bigint
""",
    "case of ages": """
SELECT a.pid,
       CASE WHEN backend_xmin IS NULL THEN age(backend_xid) ELSE age(backend_xmin) END AS held
FROM pg_stat_activity AS a
WHERE a.datname = current_database() AND a.pid != pg_backend_pid()
  AND a.state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')
  AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
ORDER BY held DESC NULLS LAST
""",
}

WRONG = {
    "ordered by pid": ("""SELECT pid FROM pg_stat_activity
                          WHERE pid <> pg_backend_pid()
                            AND coalesce(backend_xmin, backend_xid) IS NOT NULL
                          ORDER BY pid""", "顺序不对"),
    "ordered by transaction start": ("""SELECT pid FROM pg_stat_activity
                                        WHERE pid <> pg_backend_pid()
                                          AND coalesce(backend_xmin, backend_xid) IS NOT NULL
                                        ORDER BY xact_start""", "xact_start"),
    # The two sessions without a snapshot tie as NULL; pg_stat_activity lists backends in
    # slot order, and the late writer (connected first) takes an earlier slot than the writer.
    "age of xmin only, nulls last": ("""SELECT pid FROM pg_stat_activity
                                        WHERE pid <> pg_backend_pid()
                                          AND coalesce(backend_xmin, backend_xid) IS NOT NULL
                                        ORDER BY age(backend_xmin) DESC NULLS LAST""", "顺序不对"),
    "age of xmin only, nulls first": ("""SELECT pid FROM pg_stat_activity
                                         WHERE pid <> pg_backend_pid()
                                           AND coalesce(backend_xmin, backend_xid) IS NOT NULL
                                         ORDER BY age(backend_xmin) DESC""", "顺序不对"),
    "xmin only": ("""SELECT pid FROM pg_stat_activity
                     WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL
                     ORDER BY age(backend_xmin) DESC""", "backend_xid"),
    "idle in transaction": ("""SELECT pid FROM pg_stat_activity
                               WHERE state = 'idle in transaction'
                               ORDER BY xact_start""", "不占住视界"),
    "itself included": ("""SELECT pid FROM pg_stat_activity
                           WHERE coalesce(backend_xmin, backend_xid) IS NOT NULL
                           ORDER BY age(coalesce(backend_xmin, backend_xid)) DESC""",
                        "pg_backend_pid()"),
    "youngest first": ("""SELECT pid FROM pg_stat_activity
                          WHERE pid <> pg_backend_pid()
                            AND coalesce(backend_xmin, backend_xid) IS NOT NULL
                          ORDER BY age(coalesce(backend_xmin, backend_xid))""", "顺序不对"),
    "not a pid": ("""SELECT usename FROM pg_stat_activity WHERE backend_xmin IS NOT NULL""",
                  "第一列应当是 pid"),
    "broken sql": ("SELECT pid FROM pg_stat_activit", "查询执行失败"),
}


def test_reference_passes_and_again():
    first = ch14.check_holder_query(REFERENCE)
    assert len(first) == 4
    assert len(ch14.check_holder_query(REFERENCE)) == 4  # same verdict on a re-run


def test_alternative_passes():
    assert len(ch14.check_holder_query(ALTERNATIVE)) == 4


@pytest.mark.parametrize("name", sorted(MORE_RIGHT))
def test_more_right_answers_pass(name):
    assert len(ch14.check_holder_query(MORE_RIGHT[name])) == 4


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_answers_are_refused_with_the_cause(name):
    text, cause = WRONG[name]
    with pytest.raises(AssertionError) as refused:
        ch14.check_holder_query(text)
    assert cause in str(refused.value)
    assert "第" in str(refused.value) or name in ("not a pid", "broken sql")


@pytest.mark.parametrize("bad", [None, "", "   ", "x" * 5001])
def test_bad_input_is_refused_before_any_server_starts(bad):
    with pytest.raises((TypeError, ValueError)):
        ch14.check_holder_query(bad)
