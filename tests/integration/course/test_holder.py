"""course.procs.holder: a real process holding a job by a lease and a session advisory lock.
SIGKILL frees the lock at once while the lease still runs; SIGSTOP keeps the lock held
past the lease, and only the lease lets the job be taken over."""

import pytest

from cachequeue.course.procs import holder
from cachequeue.queue import jobs

LEASE = 2.0


def test_a_killed_holder_lets_go_of_its_lock_at_once_but_not_of_its_lease(conn, schema):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    h = holder.start(schema, name="h1", lease=LEASE)
    try:
        assert (h.job_id, h.attempt) == (job_id, 1)
        assert holder.backend_state(conn, h.backend) == "idle"
        assert holder.wait_for_lock(conn, job_id, 0.05) is None, "held while it lives"
        h.kill()
        assert h.wait() == -9
        waited = holder.wait_for_lock(conn, job_id, LEASE)
        left = holder.lease_left(conn, job_id)
    finally:
        h.close()
    assert waited is not None and waited < LEASE / 2, waited
    assert left > 0, "the lock was free while the lease still held the job"
    assert holder.backend_state(conn, h.backend) is None, "its server process has exited"
    assert jobs.claim(conn, lease=LEASE) is None, "the queue still waits for the lease"


def test_a_paused_holder_keeps_its_lock_while_its_lease_runs_out(conn, schema):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    h = holder.start(schema, name="h2", lease=LEASE)
    try:
        h.pause()
        assert holder.wait_for_lock(conn, job_id, LEASE + 0.5) is None
        assert holder.lease_left(conn, job_id) < 0
        assert holder.backend_state(conn, h.backend) == "idle", "the server sees a quiet session"
        taken = jobs.claim(conn, lease=LEASE, worker="rescuer")
        assert (taken.job_id, taken.attempt) == (job_id, 2), "the lease let it be taken over"
        assert holder.wait_for_lock(conn, job_id, 0.05) is None, "the lock is still held"
    finally:
        assert h.close() == -9
    assert holder.wait_for_lock(conn, job_id, LEASE) is not None


def test_a_holder_with_nothing_to_claim_says_so(schema):
    with pytest.raises(RuntimeError, match="no noop job to claim"):
        holder.start(schema, name="h3")
