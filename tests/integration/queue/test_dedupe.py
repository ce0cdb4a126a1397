"""The dedupe key: unique per tenant while its job is pending or running, free once it ends
(beside the idempotency key, unique for ever)."""

import threading

import pytest

from cachequeue import db
from cachequeue.queue import jobs


def _count(conn):
    return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]


def _submit(conn, key="report:7", tenant_id=1, **kw):
    return jobs.submission(conn, tenant_id=tenant_id, kind="noop", payload=kw.pop("payload", {}),
                           dedupe_key=key, **kw)


def test_a_key_held_by_an_active_job_returns_it_and_the_caller_can_tell(conn):
    first = _submit(conn, payload={"n": 1})
    assert first.created and first.matched is None
    again = _submit(conn, payload={"n": 2})
    assert again == jobs.Submitted(first.job_id, False, "dedupe_key")
    claim = jobs.claim(conn)  # running is still active
    assert _submit(conn).job_id == first.job_id
    assert claim.payload == {"n": 1}  # the first job's fields win
    assert _submit(conn, tenant_id=2).created  # per tenant
    assert jobs.submit(conn, tenant_id=1, kind="noop", payload={}, dedupe_key="report:7") \
        == first.job_id
    assert _count(conn) == 2


@pytest.mark.parametrize("end", ["finish", "fail", "cancel"])
def test_the_key_is_free_once_its_job_has_ended(conn, end):
    first = _submit(conn)
    claim = jobs.claim(conn)
    if end == "finish":
        assert jobs.finish(conn, claim, {})
    elif end == "fail":
        assert jobs.fail(conn, claim, "broken", permanent=True) == "failed"
    else:
        assert jobs.cancel(conn, tenant_id=1, job_id=first.job_id, actor="op", reason="r")
    second = _submit(conn)
    assert second.created and second.job_id != first.job_id


def test_the_idempotency_key_stays_taken_after_the_job_ends(conn):
    first = jobs.submission(conn, tenant_id=1, kind="noop", payload={}, idempotency_key="k")
    assert jobs.finish(conn, jobs.claim(conn), {})
    again = jobs.submission(conn, tenant_id=1, kind="noop", payload={}, idempotency_key="k")
    assert again == jobs.Submitted(first.job_id, False, "idempotency_key")


def test_a_retry_leaves_a_failed_job_alone_while_its_key_is_held_again(conn):
    old = _submit(conn).job_id
    assert jobs.fail(conn, jobs.claim(conn), "broken", permanent=True) == "failed"
    new = _submit(conn).job_id
    assert not jobs.retry(conn, tenant_id=1, job_id=old, actor="op", reason="again")
    assert jobs.status(conn, tenant_id=1, job_id=old).state == "failed" and not jobs.audit(conn, old)
    assert jobs.cancel(conn, tenant_id=1, job_id=new, actor="op", reason="r")
    assert jobs.retry(conn, tenant_id=1, job_id=old, actor="op", reason="now free")


def test_a_submit_racing_an_uncommitted_one_waits_and_returns_it(schema):
    """b's insert meets a's uncommitted row in jobs_dedupe and waits for a's transaction;
    when a commits, b inserts nothing and returns a's job (stepped by hand: b is seen
    waiting on a lock in pg_stat_activity before a commits)."""
    with db.connect(schema) as a, db.connect(schema) as b, db.connect(schema) as watch:
        out = {}
        with a.transaction():
            mine = _submit(a)
            pid = b.info.backend_pid
            thread = threading.Thread(target=lambda: out.setdefault("b", _submit(b)))
            thread.start()
            for _ in range(500):
                waiting = watch.execute("SELECT wait_event_type FROM pg_stat_activity "
                                        "WHERE pid = %s", (pid,)).fetchone()[0]
                if waiting == "Lock":
                    break
                thread.join(0.01)
            else:
                pytest.fail("b never waited for a's uncommitted row")
        thread.join(10)
        assert out["b"] == jobs.Submitted(mine.job_id, False, "dedupe_key")
        assert _count(watch) == 1


def test_concurrent_submits_with_one_key_make_exactly_one_job(schema):
    start, results = threading.Barrier(8), []

    def run():
        with db.connect(schema) as conn:
            start.wait()
            results.append(_submit(conn))

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 8 and len({r.job_id for r in results}) == 1
    assert sum(r.created for r in results) == 1
    with db.connect(schema) as conn:
        assert _count(conn) == 1


@pytest.mark.parametrize("key, error", [("", ValueError), ("   ", ValueError),
                                         ("x" * (jobs.MAX_KEY_CHARS + 1), ValueError),
                                         ("a\x00b", ValueError), (7, TypeError),
                                         (b"k", TypeError)])
def test_a_bad_dedupe_key_is_refused_and_nothing_is_written(conn, key, error):
    with pytest.raises(error, match="dedupe_key"):
        _submit(conn, key=key)
    assert _count(conn) == 0
