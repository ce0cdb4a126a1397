"""Dead letters: failed jobs kept with reasons and attempts; a filtered, audited bulk retry."""

from datetime import timedelta

import pytest

from cachequeue import db
from cachequeue.queue import deadletter, jobs
from cachequeue.queue.deadletter import Filter


def _failed(conn, kind, error, n=1):
    ids = []
    for _ in range(n):
        job_id = jobs.submit(conn, tenant_id=1, kind=kind, payload={}, max_attempts=1)
        claim = jobs.claim(conn, kinds=[kind])
        assert jobs.fail(conn, claim, error) == "failed"
        ids.append(job_id)
    return ids


def test_bulk_retry_takes_only_what_the_filter_names(conn):
    timeouts = _failed(conn, "flaky", "TimeoutError: vendor did not answer", 3)
    bugs = _failed(conn, "flaky", "KeyError: 'title'")
    others = _failed(conn, "noop", "TimeoutError: disk")
    where = Filter(kind="flaky", error_class="TimeoutError")
    dead = deadletter.failed(conn, where)
    assert [r["job_id"] for r in dead] == timeouts and {r["attempts"] for r in dead} == {1}
    plan = deadletter.bulk_retry(conn, where, actor="ops", reason="vendor outage", dry_run=True)
    assert plan == timeouts and jobs.audit(conn) == []  # a dry run changes nothing
    assert deadletter.bulk_retry(conn, where, actor="ops", reason="vendor outage") == plan
    states = {i: jobs.status(conn, tenant_id=1, job_id=i).state for i in timeouts + bugs + others}
    assert [states[i] for i in timeouts] == ["pending"] * 3
    assert states[bugs[0]] == states[others[0]] == "failed"
    audit = jobs.audit(conn)
    assert [a["job_id"] for a in audit] == timeouts
    assert audit[0]["detail"]["bulk_filter"] == {"kind": "flaky", "error_class": "TimeoutError"}
    assert jobs.history(conn, timeouts[0])[0]["error"].startswith("TimeoutError")
    again = jobs.claim(conn, kinds=["flaky"])
    assert again.attempt == 2  # attempt numbers continue on the same job id


def test_time_range_and_empty_filter(conn):
    start = conn.execute("SELECT cq_now()").fetchone()[0]
    db.set_clock(conn, start)
    early = _failed(conn, "noop", "OSError: x")
    db.set_clock(conn, start + timedelta(hours=1))
    late = _failed(conn, "noop", "OSError: x")
    window = Filter(since=start - timedelta(minutes=1), until=start + timedelta(minutes=30))
    assert deadletter.bulk_retry(conn, window, actor="ops", reason="r", dry_run=True) == early
    assert late[0] not in deadletter.bulk_retry(conn, window, actor="ops", reason="r")
    with pytest.raises(ValueError, match="needs a filter"):
        deadletter.bulk_retry(conn, Filter(), actor="ops", reason="everything", dry_run=True)
