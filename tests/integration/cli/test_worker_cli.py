"""`cachequeue worker` as real processes: SIGKILL, SIGTERM (graceful, hand-back, second
signal) and the exit statuses. Each step waits for the worker's own log line; leases are
long (30 s), so no heartbeat can come too late on a loaded machine, and the lease of the
killed worker is ended by hand rather than waited out."""

import subprocess
import sys
from pathlib import Path

import pytest

from cachequeue import db
from cachequeue.course.app import effects
from cachequeue.course.procs.fleet import Fleet
from cachequeue.queue import jobs


@pytest.fixture
def fleet(conn, schema):
    effects.install(conn)
    with Fleet(schema) as f:
        yield f


@pytest.fixture(autouse=True)
def no_suffix(monkeypatch):
    """Set up before `schema` (autouse): the schema and the workers' --schema then name
    the same schema even under `make test`'s CACHEQUEUE_SCHEMA_SUFFIX."""
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)


def submit(conn, key, **kw):
    return jobs.submit(conn, tenant_id=1, kind="effect", payload=effects.payload(key, **kw))


def test_the_console_script_is_installed():
    script = Path(sys.executable).parent / "cachequeue"
    done = subprocess.run([str(script), "worker", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "--shutdown-timeout" in done.stdout


def test_sigterm_stops_claiming_and_lets_running_work_finish(conn, fleet):
    first = submit(conn, "first", work=0.5)
    w1 = fleet.start("w1", lease=30, shutdown_timeout=30)
    w1.wait_for("started", job=first)
    w1.terminate()
    w1.wait_for("stopping")
    second = submit(conn, "second")
    assert w1.wait() == 0
    assert w1.find("finished", job=first) and not w1.find("claimed", job=second)
    assert jobs.status(conn, tenant_id=1, job_id=first).state == "done"
    assert jobs.history(conn, second) == []


def test_work_longer_than_the_deadline_is_handed_back_and_runs_elsewhere(conn, fleet):
    job_id = submit(conn, "long", slow=120, slow_attempts=[1])
    w1 = fleet.start("w1", lease=30, shutdown_timeout=0.3)
    w1.wait_for("started", job=job_id)
    w2 = fleet.start("w2", lease=30, poll=0.2)
    w1.terminate()
    assert w1.wait() == 3, "handed back: a non-zero exit status"
    assert w1.find("handed-back", job=job_id)
    w2.wait_for("finished", job=job_id, attempt=2)
    assert [h["outcome"] for h in jobs.history(conn, job_id)] == ["released", "done"]
    assert effects.counts(conn) == [(job_id, 2, 1, 1)], "two runs, one charge, one result"


def test_a_second_signal_hands_back_at_once(conn, fleet):
    job_id = submit(conn, "stuck", slow=120, slow_attempts=[1], cooperative=False)
    w1 = fleet.start("w1", lease=30, shutdown_timeout=600)
    w1.wait_for("started", job=job_id)
    w1.terminate()
    w1.wait_for("stopping")
    w1.terminate()
    assert w1.wait(timeout=30) == 3  # not 600 s: the handler thread is left behind
    assert jobs.status(conn, tenant_id=1, job_id=job_id).state == "pending"


def test_sigkill_mid_job_the_lease_expires_and_another_worker_finishes(conn, fleet, schema):
    job_id = submit(conn, "charge-1", amount=250, slow=120, slow_attempts=[1])
    w1 = fleet.start("w1", lease=30, poll=0.2)
    w1.wait_for("started", job=job_id)
    w1.kill()
    assert w1.wait() == -9
    # Nobody renews the dead worker's lease; rather than wait 30 s for it to run out, its
    # end is moved to now (a lease as long as a loaded machine may need, and no wait).
    assert conn.execute("UPDATE jobs SET locked_until = cq_now() WHERE id = %s AND state = "
                        "'running' RETURNING id", [job_id]).fetchone() == (job_id,)
    w2 = fleet.start("w2", lease=30, poll=0.2)
    w2.wait_for("finished", job=job_id, attempt=2)
    assert effects.counts(conn) == [(job_id, 2, 1, 1)]
    with db.connect(schema) as check:
        charge = check.execute("SELECT job_id, attempt, amount FROM ledger").fetchall()
    assert charge == [(job_id, 1, 250)], "booked once, by the attempt that was killed"
