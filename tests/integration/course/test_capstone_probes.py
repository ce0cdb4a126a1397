"""The capstone probes of chapter 12 on a real schema: right answers and typical wrong ones
give different facts, and no probe leaves a row behind."""

from __future__ import annotations

import pytest

from cachequeue.course.app import summaries
from cachequeue.course.labs import capstone
from cachequeue.course.views import frames
from cachequeue.queue import PermanentError, RetryPolicy, jobs

pytestmark = pytest.mark.db


@pytest.fixture
def ready(conn):
    capstone.install(conn)
    return conn


def right_submit(conn, store, user_id, document_id, template):
    user, document = store.user(user_id), store.document(document_id)
    store.authorize(user_id, document_id)
    return jobs.submit(conn, tenant_id=user.tenant_id, kind="summarise",
                       payload={"document_id": document.id, "version": document.version,
                                "template": template},
                       idempotency_key=summaries.business_key(
                           user.tenant_id, document.id, document.version, template))


def submit_without_key(conn, store, user_id, document_id, template):
    user, document = store.user(user_id), store.document(document_id)
    store.authorize(user_id, document_id)
    return jobs.submit(conn, tenant_id=user.tenant_id, kind="summarise",
                       payload={"document_id": document.id, "version": document.version,
                                "template": template})


def test_probe_submit(ready):
    before = frames.state_counts(ready)
    facts = capstone.probe_submit(ready, right_submit)
    assert facts["first"] == facts["again"] == facts["colleague"] == facts["admin"]
    assert len({facts["first"], facts["english"], facts["new_version"], facts["other_tenant"]}) == 4
    assert (facts["refused"], facts["refused_wrote"]) == ("PermissionDenied", 0)
    assert facts["row"] == (1, "summarise", {"document_id": 42, "version": 3,
                                             "template": "brief-zh"}, "summary:1:42:v3:brief-zh")
    assert facts["other_row"][0] == 2
    assert frames.state_counts(ready) == before, "rolled back"
    unkeyed = capstone.probe_submit(ready, submit_without_key)
    assert unkeyed["first"] != unkeyed["again"]


def first_wins(conn, key, job_id, summary):
    conn.execute("INSERT INTO published_summaries (business_key, job_id, summary)"
                 " VALUES (%s, %s, %s) ON CONFLICT (business_key) DO NOTHING",
                 [key, job_id, summary])
    return conn.execute("SELECT summary FROM published_summaries WHERE business_key = %s",
                        [key]).fetchone()[0]


def last_wins(conn, key, job_id, summary):
    return conn.execute("INSERT INTO published_summaries (business_key, job_id, summary)"
                        " VALUES (%s, %s, %s) ON CONFLICT (business_key) DO UPDATE"
                        " SET summary = EXCLUDED.summary RETURNING summary",
                        [key, job_id, summary]).fetchone()[0]


def test_probe_publish(ready):
    first_wins(ready, "summary:1:42:v3:brief-zh", 9, "a try-out")
    first_wins(ready, "summary:1:44:v1:brief-zh", 9, "another key")
    facts = capstone.probe_publish(ready, first_wins)
    assert (facts["first"], facts["second"], facts["other"]) == \
        ("第一次运行的摘要", "第一次运行的摘要", "第四版的摘要")
    assert facts["rows"] == [("summary:1:42:v3:brief-zh", 1, "第一次运行的摘要"),
                             ("summary:1:42:v4:brief-zh", 2, "第四版的摘要")]
    assert capstone.probe_publish(ready, last_wins)["second"] == "重试时的摘要"
    assert ready.execute("SELECT business_key, job_id, summary FROM published_summaries"
                         " ORDER BY 1").fetchall() == [
        ("summary:1:42:v3:brief-zh", 9, "a try-out"), ("summary:1:44:v1:brief-zh", 9, "another key")]


def capped_fail(conn, claim, error, rng=None):
    permanent = isinstance(error, PermanentError | LookupError)
    return jobs.fail(conn, claim, error, permanent=permanent, rng=rng,
                     policy=RetryPolicy(max_attempts=6, base=1.0, cap=5.0))


def uncapped_fail(conn, claim, error, rng=None):
    return jobs.fail(conn, claim, error, rng=rng, policy=RetryPolicy(max_attempts=6, cap=60.0))


def test_probe_retry(ready):
    facts = capstone.probe_retry(ready, capped_fail)
    assert facts["transient"] == [(1, "pending", 1.0), (2, "pending", 2.0), (3, "pending", 4.0),
                                  (4, "pending", 5.0), (5, "pending", 5.0), (6, "failed", None)]
    assert facts["permanent"] == [("PermanentError", "failed", 1), ("LookupError", "failed", 1)]
    wrong = capstone.probe_retry(ready, uncapped_fail)
    assert [d for _, _, d in wrong["transient"]][3:5] == [8.0, 16.0]
    assert [s for _, s, _ in wrong["permanent"]] == ["pending", "pending"]  # the class alone decides nothing
    assert sum(frames.state_counts(ready).values()) == 0, "rolled back"
    assert ready.execute("SELECT cq_now() > now() - interval '1 day'").fetchone()[0], \
        "the clock is released"


def test_probe_metrics(ready):
    jobs.submit(ready, tenant_id=1, kind="noop", payload={})

    def right(conn):
        return frames.fetch_df(conn, "SELECT tenant_id, state::text AS state, count(*) AS jobs"
                                     " FROM jobs GROUP BY 1, 2 ORDER BY 1, 2")

    def tenant_one_only(conn):
        return frames.fetch_df(conn, "SELECT tenant_id, state::text AS state, count(*) AS jobs"
                                     " FROM jobs WHERE tenant_id = 1 GROUP BY 1, 2 ORDER BY 1, 2")

    facts = capstone.probe_metrics(ready, right)
    assert facts["got"] == facts["expected"] == [(1, "pending", 1)]
    assert facts["got_after"] == facts["expected_after"] == \
        [(1, "pending", 1), (2, "cancelled", 1), (2, "pending", 2)]
    wrong = capstone.probe_metrics(ready, tenant_one_only)
    assert wrong["got_after"] != wrong["expected_after"]
    assert capstone.probe_metrics(ready, lambda conn: frames.state_counts(conn))["columns"] == []
