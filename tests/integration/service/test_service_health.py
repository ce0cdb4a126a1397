"""Liveness vs readiness (Q14): /healthz never touches the database; /readyz answers 503
within its timeout when the claim path cannot run, and 200 again once it can. The server
that is stopped is a private throw-away one, whatever DATABASE_URL says."""

import threading
import time
from contextlib import contextmanager

import httpx
import pytest
from servicekit import auth, serve, stop, wait_until

from cachequeue import db, embedded
from cachequeue.course.app import webapp


def test_both_answer_200_when_all_is_well(live):
    with live.client() as http:
        assert http.get("/healthz").json() == {"status": "alive", "streams": 0}
        assert http.get("/readyz").json() == {"status": "ready"}


def test_a_locked_jobs_table_makes_readiness_fail_within_its_timeout(make_live, schema):
    live = make_live(ready_timeout=0.5)
    with db.connect(schema) as blocker, live.client() as http:
        with blocker.transaction():
            blocker.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")  # a migration, say
            started = time.monotonic()
            ready = http.get("/readyz")
            waited = time.monotonic() - started
            alive = http.get("/healthz")
        after = http.get("/readyz")
    assert ready.status_code == 503 and ready.json()["code"] == "not_ready"
    assert ready.headers["retry-after"] == "1"
    assert waited < 5, f"answered after {waited:.1f} s, the timeout is 0.5 s"
    assert alive.status_code == 200 and after.status_code == 200


def test_requests_behind_a_table_lock_answer_503_within_the_lock_timeout(make_live, schema):
    """A migration's ACCESS EXCLUSIVE lock held for longer than any client waits: every
    request that needs the table is cancelled at the pool's lock_timeout (1 s here, 5 s by
    default) and answered 503 database_unavailable, while the lock is still held."""
    live = make_live(lock_timeout=1.0)
    with live.client() as http:
        job = http.post("/v1/jobs", json={"kind": "noop", "payload": {}}, headers=auth(11))
        assert job.status_code == 202, job.text
        path = f"/v1/jobs/{job.json()['id']}"
    answers: list[tuple[int, str, float]] = []

    def ask(method: str) -> None:
        with httpx.Client(base_url=live.url, timeout=30) as http:
            started = time.monotonic()
            if method == "GET":
                got = http.get(path, headers=auth(11))
            else:
                got = http.post("/v1/jobs", json={"kind": "noop", "payload": {}},
                                headers=auth(11))
            answers.append((got.status_code, got.json().get("code", ""),
                            time.monotonic() - started))

    with db.connect(schema) as blocker, blocker.transaction():
        blocker.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
        threads = [threading.Thread(target=ask, args=("GET" if n % 2 else "POST",))
                   for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        # Still inside the lock's transaction: nobody waited for its end.
    assert len(answers) == 8
    assert {(status, code) for status, code, _ in answers} == {(503, "database_unavailable")}
    slowest = max(seconds for _, _, seconds in answers)
    assert slowest < 7, f"the slowest answer took {slowest:.1f} s; the lock timeout is 1 s"
    with live.service.pool.connection() as conn:
        assert conn.execute("SHOW lock_timeout").fetchone()[0] == "1s"


def test_every_pooled_connection_has_the_default_bounds(live):
    with live.service.pool.connection() as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "10s"
        assert conn.execute("SHOW lock_timeout").fetchone()[0] == "5s"


def test_readiness_fails_while_none_of_the_supervised_workers_runs(live):
    running = [0]
    live.service.configure(workers_running=lambda: running[0])
    with live.client() as http:
        none = http.get("/readyz")
        running[0] = 1
        one = http.get("/readyz")
    assert (none.status_code, none.json()["code"]) == (503, "not_ready")
    assert none.json()["detail"] == "no worker process of this service is running"
    assert none.headers["retry-after"] == "1"
    assert one.status_code == 200


@pytest.fixture(scope="module")
def server():
    with embedded.Server.private() as s:
        yield s


@contextmanager
def served_on(server, schema):
    """The course's app on `schema` of the private `server`, with 1 s readiness and pool
    timeouts, served in a thread; an httpx client of it. The app is stopped on the way out."""
    app = webapp.create_app(schema, url=server.url, ready_timeout=1.0, pool_timeout=1.0)
    uv, thread, url = serve(app)[:3]
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            yield http
    finally:
        stop(app, uv, thread)


@pytest.mark.private_server  # the server it stops is its own
def test_stopping_the_database_fails_readiness_not_liveness(server):
    with served_on(server, "svc_health") as http:
        assert http.get("/readyz").status_code == 200
        server.stop()
        alive, ready = http.get("/healthz"), http.get("/readyz")
        refused = http.post("/v1/jobs", json={"kind": "noop"}, headers=auth(11))
        server.start()
        wait_until(lambda: http.get("/readyz").status_code == 200, 60, "ready again")
        accepted = http.post("/v1/jobs", json={"kind": "noop"}, headers=auth(11))
    assert alive.status_code == 200
    assert ready.status_code == 503 and ready.json()["code"] == "not_ready"
    assert refused.status_code == 503 and refused.json()["code"] == "database_unavailable"
    assert refused.headers["retry-after"] == "5"
    assert accepted.status_code == 202


def test_a_readiness_probe_writes_nothing(conn):
    from cachequeue.queue import jobs
    from cachequeue.service.operations import check_ready

    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    with conn.transaction():
        assert check_ready(conn, 1.0) == 1  # it saw the runnable job
        xid = conn.execute("SELECT pg_current_xact_id_if_assigned()").fetchone()[0]
    assert xid is None, "the probe took a transaction id: it locked or wrote something"


def test_a_lock_that_stops_claims_makes_readiness_fail(make_live, schema):
    live = make_live(ready_timeout=0.5)
    with db.connect(schema) as blocker, live.client() as http:
        with blocker.transaction():
            blocker.execute("LOCK TABLE jobs IN SHARE MODE")  # CREATE INDEX takes this one
            ready = http.get("/readyz")
        after = http.get("/readyz")
    assert ready.status_code == 503 and "ShareLock" in ready.json()["detail"]
    assert after.status_code == 200


def test_a_server_that_takes_no_writes_is_not_ready(schema):
    from cachequeue.service.operations import NotReady, check_ready

    with db.connect(schema) as standby_like:
        standby_like.execute("SET default_transaction_read_only = on")
        with pytest.raises(NotReady, match="does not take writes"):
            check_ready(standby_like, 1.0)


@pytest.mark.private_server  # the server it stops is its own
def test_a_public_readiness_answer_names_no_driver_class(server):
    with served_on(server, "svc_reasons") as http:
        server.stop()
        down = http.get("/readyz")
        server.start()
        wait_until(lambda: http.get("/readyz").status_code == 200, 60, "ready again")
    detail = down.json()["detail"]
    assert down.status_code == 503 and detail.startswith("the database is not usable: ")
    assert not any(name in detail for name in ("PoolTimeout", "OperationalError",
                                               "QueryCanceled", "NotReady", "psycopg"))
