"""Cancellation and late results (Q20): a cancelled pending job never runs; late results of
cancelled, deleted or outdated jobs are not published as current."""

from cachequeue.course.app import data, editing
from cachequeue.queue import jobs, outbox


def _summarise(conn, version):
    return jobs.submit(conn, tenant_id=1, kind="summarise",
                       payload={"document_id": 42, "version": version, "template": "brief"})


def test_a_cancelled_pending_job_is_never_claimed(conn):
    job_id = _summarise(conn, 3)
    assert jobs.cancel(conn, tenant_id=1, job_id=job_id, actor="user", reason="not needed")
    assert jobs.claim(conn) is None
    assert [a["action"] for a in jobs.audit(conn, job_id)] == ["cancel"]


def test_late_results_are_not_current(conn):
    data.load_sample(conn)
    outbox.install(conn)
    old = _summarise(conn, 3)
    claim = jobs.claim(conn)
    assert editing.new_version(conn, 1, 42, "新的正文") == 4  # the document moves on
    assert jobs.finish(conn, claim, {"summary": "v3"})  # the job did finish ...
    assert editing.latest_summary(conn, 1, 42)["version"] == 3  # ... the naive read shows it
    assert editing.current_summary(conn, 1, 42) is None  # ... but it is not current
    assert jobs.status(conn, tenant_id=1, job_id=old).state == "done"
    _summarise(conn, 4)
    assert jobs.finish(conn, jobs.claim(conn), {"summary": "v4"})
    assert editing.current_summary(conn, 1, 42) == {"version": 4, "output": {"summary": "v4"}}
    assert editing.delete_document(conn, 1, 42)
    assert editing.current_summary(conn, 1, 42) is None
    assert outbox.counts(conn)["written"] == 1  # the version and its event, together


def test_a_deleted_job_accepts_no_result(conn):
    _summarise(conn, 3)
    claim = jobs.claim(conn)
    conn.execute("DELETE FROM jobs WHERE id = %s", [claim.job_id])  # a retention purge, say
    assert not jobs.finish(conn, claim, {"summary": "late"})
    assert conn.execute("SELECT count(*) FROM job_results").fetchone()[0] == 0
