"""graders.ch12.check_step for the database steps (3, 4, 6, 7) on a real schema: right answers that
differ from the reference pass twice, realistic wrong ones fail with the message that names
their cause, and the graders leave no row behind."""

from __future__ import annotations

import pytest

from cachequeue.course.app import summaries
from cachequeue.course.graders import ch12
from cachequeue.course.labs import capstone
from cachequeue.course.views import frames
from cachequeue.queue import PermanentError, RetryPolicy, jobs

pytestmark = pytest.mark.db


@pytest.fixture
def ready(conn):
    capstone.install(conn)
    return conn


def passes_twice(ready, step, answer):
    before = frames.state_counts(ready)
    assert ch12.check_step(step, answer, ready) == ch12.check_step(step, answer, ready) == ch12.PASSED
    assert frames.state_counts(ready) == before, "rolled back"


def fails_twice(ready, step, answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch12.check_step(step, answer, ready)


# --- step 3 -------------------------------------------------------------------------------


def submit(conn, store, user_id, document_id, template, *, key=None, tenant=None, payload=None,
           authorize=True):
    if authorize:
        store.authorize(user_id, document_id)
    user, d = store.user(user_id), store.document(document_id)
    tenant = user.tenant_id if tenant is None else tenant
    return jobs.submit(conn, tenant_id=tenant, kind="summarise",
                       payload=payload or {"document_id": d.id, "version": d.version,
                                           "template": template},
                       idempotency_key=key(user, d, template) if key else None)


def submit_other_shape(conn, store, user_id, document_id, template):
    d = store.document(document_id)
    view = store.authorize(user_id, document_id)
    assert view
    tenant = store.user(user_id).tenant_id
    key = summaries.business_key(tenant, d.id, d.version, template)
    return jobs.submit(conn, tenant_id=tenant, kind="summarise", idempotency_key=key,
                       payload={"template": template, "version": d.version, "document_id": d.id})


def by_business_key(user, d, template):
    return summaries.business_key(user.tenant_id, d.id, d.version, template)


def test_step3_a_right_answer_in_another_shape_passes(ready):
    passes_twice(ready, 3, submit_other_shape)


@pytest.mark.parametrize(("answer", "message"), [
    (lambda c, s, u, d, t: submit(c, s, u, d, t), "都应当是同一个任务"),
    (lambda c, s, u, d, t: submit(c, s, u, d, t, key=lambda user, doc, tpl:
                                  f"summary:{user.id}:{doc.id}:v{doc.version}:{tpl}"), "不含用户"),
    (lambda c, s, u, d, t: submit(c, s, u, d, t, key=lambda user, doc, tpl:
                                  f"summary:{user.tenant_id}:{doc.id}:{tpl}"), "各是一个新任务"),
    (lambda c, s, u, d, t: submit(c, s, u, d, t, key=by_business_key, authorize=False),
     "应当抛出 PermissionDenied 且什么也不写"),
    (lambda c, s, u, d, t: submit(c, s, u, d, t, key=by_business_key, tenant=1), "各是一个新任务|赵律的任务属于租户 2"),
])
def test_step3_wrong_answers_fail_with_their_cause(ready, answer, message):
    fails_twice(ready, 3, answer, message)


# --- step 4 -------------------------------------------------------------------------------


def publish_returning(conn, business_key, job_id, summary):
    """Another right shape: one statement, a no-op update on conflict returns the stored row."""
    return conn.execute("INSERT INTO published_summaries (business_key, job_id, summary)"
                        " VALUES (%s, %s, %s) ON CONFLICT (business_key) DO UPDATE"
                        " SET job_id = published_summaries.job_id RETURNING summary",
                        [business_key, job_id, summary]).fetchone()[0]


def publish_plain(conn, business_key, job_id, summary):
    conn.execute("INSERT INTO published_summaries (business_key, job_id, summary) VALUES (%s, %s, %s)",
                 [business_key, job_id, summary])
    return summary


def publish_last_wins(conn, business_key, job_id, summary):
    return conn.execute("INSERT INTO published_summaries (business_key, job_id, summary)"
                        " VALUES (%s, %s, %s) ON CONFLICT (business_key) DO UPDATE"
                        " SET summary = EXCLUDED.summary RETURNING summary",
                        [business_key, job_id, summary]).fetchone()[0]


def publish_returns_argument(conn, business_key, job_id, summary):
    conn.execute("INSERT INTO published_summaries (business_key, job_id, summary)"
                 " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", [business_key, job_id, summary])
    return summary


def publish_returning_nothing(conn, business_key, job_id, summary):
    return conn.execute("INSERT INTO published_summaries (business_key, job_id, summary)"
                        " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING RETURNING summary",
                        [business_key, job_id, summary]).fetchone()[0]


def test_step4_a_right_answer_in_another_shape_passes(ready):
    passes_twice(ready, 4, publish_returning)


@pytest.mark.parametrize(("answer", "message"), [
    (publish_plain, "UniqueViolation"),
    (publish_last_wins, "不能 DO UPDATE"),
    (publish_returns_argument, "返回的却是参数"),
    (publish_returning_nothing, "RETURNING 不返回任何行"),
])
def test_step4_wrong_answers_fail_with_their_cause(ready, answer, message):
    fails_twice(ready, 4, answer, message)
    assert ready.execute("SELECT count(*) FROM published_summaries").fetchone()[0] == 0


# --- step 6 -------------------------------------------------------------------------------


def fail_other_shape(conn, claim, error, rng=None):
    policy = RetryPolicy(cap=5.0, base=1.0, max_attempts=6)
    if isinstance(error, (PermanentError, LookupError)):
        return jobs.fail(conn, claim, error, permanent=True, policy=policy, rng=rng)
    return jobs.fail(conn, claim, error, policy=policy, rng=rng)


def fail_with(policy, *, permanent=(PermanentError, LookupError), use_rng=True, give_back=True):
    def fail_summary(conn, claim, error, rng=None):
        state = jobs.fail(conn, claim, error, permanent=isinstance(error, permanent),
                          policy=policy, rng=rng if use_rng else None)
        return state if give_back else None
    return fail_summary


def test_step6_a_right_answer_in_another_shape_passes(ready):
    passes_twice(ready, 6, fail_other_shape)


@pytest.mark.parametrize(("answer", "message"), [
    (fail_with(RetryPolicy(max_attempts=6, base=1.0)), "RetryPolicy 要有 base=1.0 与 cap=5.0"),
    (fail_with(RetryPolicy(max_attempts=5, base=1.0, cap=5.0)), "第 6 次失败后进入 failed"),
    (fail_with(RetryPolicy(max_attempts=6, base=1.0, cap=5.0), permanent=PermanentError),
     r"\('LookupError', 'pending', 1\)"),
    (fail_with(RetryPolicy(max_attempts=6, base=1.0, cap=5.0), give_back=False), "忘了 return"),
])
def test_step6_wrong_answers_fail_with_their_cause(ready, answer, message):
    fails_twice(ready, 6, answer, message)


# --- step 7 -------------------------------------------------------------------------------


def counts_in_pandas(conn):
    """Another right shape: the rows by SQL, the counting by pandas, ordered by state."""
    rows = frames.fetch_df(conn, "SELECT tenant_id, state::text AS state FROM jobs")
    return rows.groupby(["tenant_id", "state"]).size().reset_index(name="jobs")


def counts_by_state_only(conn):
    return frames.fetch_df(conn, "SELECT state::text AS state, count(*) AS jobs FROM jobs GROUP BY 1")


def counts_of_tenant_one(conn):
    return frames.fetch_df(conn, "SELECT tenant_id, state::text AS state, count(*) AS jobs"
                                 " FROM jobs WHERE tenant_id = 1 GROUP BY 1, 2")


def counts_as_dict(conn):
    return frames.state_counts(conn)


def test_step7_a_right_answer_in_another_shape_passes(ready):
    jobs.submit(ready, tenant_id=1, kind="noop", payload={})
    passes_twice(ready, 7, counts_in_pandas)


@pytest.mark.parametrize(("answer", "message"), [
    (counts_by_state_only, r"列应当是 tenant_id、state、jobs：实际是 \['state', 'jobs'\]"),
    (counts_of_tenant_one, "加入租户 2 的两个等待中的任务"),
    (counts_as_dict, r"实际是 \[\]"),
])
def test_step7_wrong_answers_fail_with_their_cause(ready, answer, message):
    jobs.submit(ready, tenant_id=1, kind="noop", payload={})
    fails_twice(ready, 7, answer, message)
