"""queue.Worker in this process (a thread), against real PostgreSQL: a lease lost to a cancel,
graceful shutdown and hand-back, LISTEN wake-up, reconnects. Waits are on events (a
handler's threading.Event, the worker's `ready`, the jobs channel), bounded by generous
timeouts; nothing sleeps to let things happen, and nothing depends on how long a step
takes. Heartbeats and leases that run out are shown turn by turn on a manual clock
(test_worker_turns.py)."""

import threading
import time
from contextlib import contextmanager

import pytest

from cachequeue import db
from cachequeue.clock import ManualClock
from cachequeue.queue import PermanentError, RetryPolicy, Worker, jobs, notify, registry
from cachequeue.queue.context import HANDED_BACK, LOST

WAIT = 30  # seconds: the bound on "eventually"


@contextmanager
def running(worker):
    """Run `worker` in a thread; stop it gracefully and join at the end. Yields its stats
    holder: {"stats": Counter} once run() returned."""
    result = {}
    thread = threading.Thread(target=lambda: result.update(stats=worker.run()), daemon=True)
    thread.start()
    assert worker.ready.wait(WAIT), "the worker never became ready"
    try:
        yield result
    finally:
        worker.stop()
        thread.join(WAIT)
        assert not thread.is_alive(), "the worker did not stop"


def make(schema, handlers, **kw):
    kw.setdefault("poll", 0.2)
    kw.setdefault("name", "t1")
    # The schema's name tags the worker's sessions (tests run in parallel on one database).
    return Worker(lambda: db.connect(schema, application_name=schema), handlers, **kw)


@pytest.fixture
def watch(schema):
    """A session LISTENing on the jobs channel: wait_state() wakes on each change."""
    with db.connect(schema) as connection:
        notify.listen(connection)
        yield connection


def wait_state(watch, job_id, *states, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = jobs.status(watch, tenant_id=1, job_id=job_id)
        if st.state in states:
            return st
        for _ in watch.notifies(timeout=0.2, stop_after=1):
            pass
    raise AssertionError(f"job {job_id} never reached {states}")


def test_jobs_run_concurrently_and_a_graceful_stop_hands_nothing_back(conn, schema, watch):
    both_running = threading.Barrier(2, timeout=WAIT)

    def together(payload, ctx):
        both_running.wait()  # only passes if two handlers run at the same time
        return {"n": payload["n"], "worker": ctx.worker}

    ids = [jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n}) for n in range(4)]
    worker = make(schema, {"noop": together}, concurrency=2)
    with running(worker) as result:
        for job_id in ids:
            wait_state(watch, job_id, "done")
    assert result["stats"]["finished"] == 4 and result["stats"]["claimed"] == 4
    assert result["stats"]["released"] == 0
    outputs = conn.execute("SELECT output FROM job_results ORDER BY job_id").fetchall()
    assert [o[0] for o in outputs] == [{"n": n, "worker": "t1"} for n in range(4)]
    [row] = registry.status(conn)
    assert (row["name"], row["jobs_in_hand"]) == ("t1", 0) and row["stopped_at"] is not None


def test_handler_errors_retry_or_fail_and_payload_only_handlers_work(conn, schema, watch):
    def permanent(payload):
        raise PermanentError("unsupported format")

    calls = []

    def flaky(payload):
        calls.append(1)
        if len(calls) == 1:
            raise TimeoutError("vendor busy")
        return "ok"

    bad = jobs.submit(conn, tenant_id=1, kind="always_fail", payload={})
    retried = jobs.submit(conn, tenant_id=1, kind="flaky", payload={})
    unstorable = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    worker = make(schema, {"always_fail": permanent, "flaky": flaky,
                           "noop": lambda payload: {"at": object()}},
                  policy=RetryPolicy(base=0.01, cap=0.01))
    with running(worker) as result:
        assert wait_state(watch, bad, "failed").last_error == "PermanentError: unsupported format"
        assert wait_state(watch, retried, "done").attempts == 2
        assert wait_state(watch, unstorable, "failed").last_error.startswith("InvalidJob")
    assert (result["stats"]["failed"], result["stats"]["retrying"]) == (2, 1)


def test_a_lost_lease_reaches_the_handler_through_its_context(conn, schema, watch):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    started, seen = threading.Event(), {}

    def cooperative(payload, ctx):
        started.set()
        seen["woken"] = ctx.wait(WAIT)
        seen["lost"], seen["reason"] = ctx.lost, ctx.reason
        return "nobody will store this"

    worker = make(schema, {"noop": cooperative}, lease=3)
    with running(worker) as result:
        assert started.wait(WAIT)
        assert jobs.cancel(conn, tenant_id=1, job_id=job_id, actor="ops", reason="user left")
        # The cancel notification makes the worker renew at once: the lease is gone.
        deadline = time.monotonic() + WAIT
        while "reason" not in seen and time.monotonic() < deadline:
            for _ in watch.notifies(timeout=0.1):
                pass
    assert seen == {"woken": True, "lost": True, "reason": LOST}
    assert result["stats"]["lost"] == 1 and result["stats"]["rejected"] == 1
    assert jobs.status(conn, tenant_id=1, job_id=job_id).state == "cancelled"


def test_after_stop_nothing_is_claimed_and_running_work_finishes(conn, schema, watch):
    first = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    started, go = threading.Event(), threading.Event()

    def gated(payload):
        started.set()
        assert go.wait(WAIT)
        return "finished after stop"

    worker = make(schema, {"noop": gated}, shutdown_timeout=WAIT)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    assert started.wait(WAIT)
    worker.stop()
    second = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    go.set()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert jobs.status(conn, tenant_id=1, job_id=first).output == "finished after stop"
    assert (jobs.status(conn, tenant_id=1, job_id=second).state, jobs.history(conn, second)) == (
        "pending", [])
    assert worker.stats["released"] == 0


@pytest.mark.parametrize("now", [False, True], ids=["after-timeout", "stop-now"])
def test_work_still_running_at_the_deadline_is_handed_back(conn, schema, now):
    job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={}, max_attempts=1)
    started, seen = threading.Event(), {}

    def long(payload, ctx):
        started.set()
        ctx.wait(WAIT)
        seen["reason"] = ctx.reason

    worker = make(schema, {"noop": long}, shutdown_timeout=0.2)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    assert started.wait(WAIT)
    worker.stop_now() if now else worker.stop()
    thread.join(WAIT)
    assert not thread.is_alive() and worker.stats["released"] == 1
    st = jobs.status(conn, tenant_id=1, job_id=job_id)
    assert (st.state, st.attempts, st.handbacks, st.max_attempts) == ("pending", 1, 1, 1)
    [row] = jobs.history(conn, job_id)
    assert row["outcome"] == "released" and row["error"].startswith("worker stopped")
    assert jobs.claim(conn).attempt == 2  # the job handed back on its last attempt runs again
    assert seen == {"reason": HANDED_BACK}


def test_listen_wakes_an_idle_worker_that_sends_almost_no_statements(conn, schema, watch):
    # On a clock that never moves, no poll and no heartbeat ever comes due, however slow
    # the machine: only the notification can wake the worker (batch_wait 0: a result is
    # written as soon as it is reported).
    worker = make(schema, {"noop": lambda payload: "woken"}, poll=60, lease=60,
                  clock=ManualClock(), batch_wait=0)
    with running(worker):
        before = worker.stats["statements"]
        job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
        assert wait_state(watch, job_id, "done").output == "woken"
        used = worker.stats["statements"] - before
    assert used <= 4, (f"claim + finish, and a look for more work after each wake-up that "
                       f"found none (the listener's first, the freed slot's), got {used}")


def test_a_worker_reconnects_after_its_sessions_are_cut_off(conn, schema, watch):
    worker = make(schema, {"noop": lambda payload: "after reconnect"}, poll=0.2)
    with running(worker):
        cut = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()", [schema]).fetchone()[0]
        assert cut == 1, "the loop's one session: it also listens"
        job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
        assert wait_state(watch, job_id, "done").output == "after reconnect"
    assert worker.stats["disconnects"] >= 1


@pytest.mark.parametrize("kwargs, error", [
    ({"concurrency": 0}, ValueError), ({"lease": 0}, ValueError),
    ({"heartbeat": 10, "lease": 10}, ValueError), ({"heartbeat": 5, "lease": 10}, ValueError),
    ({"poll": -1}, ValueError),
    ({"shutdown_timeout": float("nan")}, ValueError), ({"kinds": ["summarise"]}, ValueError),
    ({"listen": 1}, TypeError), ({"name": ""}, ValueError),
])
def test_bad_settings_are_refused_before_anything_runs(schema, kwargs, error):
    with pytest.raises(error):
        make(schema, {"noop": print}, **kwargs)
    with pytest.raises(TypeError):
        Worker(db.connect, [("noop", print)])
