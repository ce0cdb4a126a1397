"""A multi-stage job resumes from its last checkpoint; recorded stages never run again."""

from datetime import timedelta

import pytest

from cachequeue import db
from cachequeue.errors import LeaseLost
from cachequeue.queue import checkpoints, jobs


class Crash(Exception):
    pass


def _run(conn, claim, calls, crash_at=None):
    cp = checkpoints.Checkpoints(conn, claim)

    def work(name, value):
        def run():
            if name == crash_at:
                raise Crash(name)
            calls.append(name)
            return value
        return run

    parts = cp.stage("split", work("split", ["a", "b", "c"]))
    done = [cp.stage(f"part:{i}", work(f"part:{i}", p.upper())) for i, p in enumerate(parts)]
    return cp, cp.stage("combine", work("combine", "".join(done)))


def test_a_crash_mid_job_resumes_from_the_last_checkpoint(conn):
    checkpoints.install(conn)
    job_id = jobs.submit(conn, tenant_id=1, kind="summarise", payload={})
    first = jobs.claim(conn, lease=5)
    calls = []
    with pytest.raises(Crash):
        _run(conn, first, calls, crash_at="part:2")
    assert list(checkpoints.load(conn, job_id)) == ["split", "part:0", "part:1"]
    db.set_clock(conn, first.locked_until + timedelta(seconds=1))  # the lease runs out
    second = jobs.claim(conn, lease=5)
    assert second.attempt == 2
    cp, result = _run(conn, second, calls)
    assert result == "ABC"
    assert cp.skipped == ["split", "part:0", "part:1"] and cp.ran == ["part:2", "combine"]
    assert calls == ["split", "part:0", "part:1", "part:2", "combine"]  # each once


def test_a_holder_that_lost_its_lease_records_nothing(conn):
    checkpoints.install(conn)
    job_id = jobs.submit(conn, tenant_id=1, kind="summarise", payload={})
    claim = jobs.claim(conn, lease=5)
    assert jobs.cancel(conn, tenant_id=1, job_id=job_id, actor="ops", reason="r")
    with pytest.raises(LeaseLost):
        checkpoints.Checkpoints(conn, claim).stage("split", lambda: [1])
    assert checkpoints.load(conn, job_id) == {}
