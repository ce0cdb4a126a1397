"""The in-memory QueueModel and the PostgreSQL queue agree on every operation sequence."""

import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings

from cachequeue import db
from cachequeue.course import chapter
from cachequeue.course.model import lockstep
from cachequeue.course.model.lockstep import Step
from cachequeue.course.model.queue_model import QueueModel

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def shared_conn(database_url):
    """One schema for every example: replay() empties its queue tables before each run."""
    name = f"t_lockstep_{uuid.uuid4().hex[:8]}"
    with db.connect() as admin:
        chapter.reset(admin, name)
    with db.connect(name) as conn:
        yield conn
    with db.connect() as admin:
        db.drop_schema(admin, name)


def S(op, *args):
    return Step(op, args)


RECLAIM = [S("submit", 1, "noop", 3, None), S("claim", 30.0), S("advance", 30.0),
           S("claim", 30.0), S("finish", 0), S("fail", 0, False), S("heartbeat", 0),
           S("finish", 1), S("finish", 1)]
CAP = [S("submit", 1, "always_fail", 3, None), S("submit", 1, "noop", 3, None),
       *[s for _ in range(3) for s in (S("claim", 30.0), S("fail", -1, False),
                                      S("claim", 30.0), S("finish", -1), S("advance", 8.0))]]
EXPIRY_ON_LAST_ATTEMPT = [S("submit", 2, "noop", 1, "k"), S("submit", 2, "noop", 1, "k"),
                          S("claim", 5.0), S("advance", 5.0), S("claim", 5.0),
                          S("retry", 2, 0), S("claim", 5.0), S("cancel", 1, 0),
                          S("cancel", 2, 0), S("finish", -1)]


def test_known_sequences_agree_step_by_step(shared_conn):
    for sequence in (RECLAIM, CAP, EXPIRY_ON_LAST_ATTEMPT):
        trace = lockstep.replay(shared_conn, sequence)
        assert trace.agree, trace.first_difference()
    # The sequences do reach the interesting transitions (or this test would prove little).
    assert [r["model"] for r in lockstep.replay(shared_conn, RECLAIM).rows][-5:] == [
        False, None, False, True, False]
    final = lockstep.replay(shared_conn, CAP).postgres_jobs
    assert [(view[0], view[1]) for view in final.values()] == [("failed", 3), ("done", 1)]


def test_the_comparison_detects_a_model_that_is_wrong_by_one_boundary(shared_conn):
    class LateExpiry(QueueModel):
        """Treats a lease as still held at exactly locked_until (the SQL says expired)."""

        def _owned(self, claim, now):
            return super()._owned(claim, now - 1e-3)

    trace = lockstep.replay(shared_conn, RECLAIM[:2] + [S("advance", 30.0), S("finish", 0)],
                            model_class=LateExpiry)
    assert not trace.agree
    assert trace.first_difference() == {"step": "finish(0)", "model": True, "postgres": False,
                                        "same": False}


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=lockstep.steps(max_size=20))
@example(sequence=RECLAIM)
def test_random_sequences_agree(shared_conn, sequence):
    trace = lockstep.replay(shared_conn, sequence)
    assert trace.agree, (trace.first_difference(), trace.model_jobs, trace.postgres_jobs)


def test_step_rejects_unknown_ops():
    with pytest.raises(ValueError, match="unknown op"):
        Step("teleport")


def test_the_models_states_and_kinds_are_the_databases(conn):
    """queue_model.STATES and queue_model.KINDS are hand-kept copies of queue.sql; they must not drift."""
    from cachequeue.course.model import queue_model

    states = conn.execute("SELECT enum_range(NULL::job_state)::text[]").fetchone()[0]
    kinds = {r[0] for r in conn.execute("SELECT kind FROM job_kinds")}
    assert tuple(states) == queue_model.STATES
    assert kinds == queue_model.KINDS
