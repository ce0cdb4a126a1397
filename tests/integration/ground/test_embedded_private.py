"""embedded.Server.private(): a private server that can be restarted and is deleted
afterwards, made from the template in a fraction of initdb's time; a Worker carries on
across a real restart of it."""

import threading
import time

import psycopg
import pytest

from cachequeue import db, embedded
from cachequeue.course import chapter
from cachequeue.queue import Worker, jobs, notify

pytestmark = pytest.mark.private_server  # Server.private(): DATABASE_URL changes nothing here


@pytest.fixture(scope="module")
def server():
    with embedded.Server.private() as s:
        yield s
    assert not s.folder.exists(), "close() deletes the folder"


def test_restart_cuts_sessions_off_and_keeps_committed_data(server):
    with db.connect(url=server.url) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS kept (n int)")
        conn.execute("INSERT INTO kept VALUES (1)")
        server.restart()
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
    server.restart("immediate")  # like a crash: recovery from the WAL
    with db.connect(url=server.url) as conn:
        assert conn.execute("SELECT count(*) FROM kept").fetchone()[0] == 1
    with pytest.raises(ValueError):
        server.stop("smart")


def test_a_folder_left_by_a_dead_process_is_removed_with_its_server(server):
    orphan = embedded.Server.private()
    (orphan.folder / "owner.pid").write_text("999999999\n")  # a process that cannot exist
    assert orphan.running
    embedded.Server.private().close()  # the next one reaps it
    assert not orphan.folder.exists() and not orphan.running and orphan.pid() is None


def test_a_worker_finishes_its_job_across_a_server_restart(server, monkeypatch):
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)
    with db.connect(url=server.url) as conn:
        chapter.reset(conn, "restart")
    started, go = threading.Event(), threading.Event()

    def slow(payload):
        started.set()
        assert go.wait(30)
        return "survived"

    worker = Worker(lambda: db.connect("restart", url=server.url), {"noop": slow},
                    name="r1", lease=30, poll=0.2)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    with db.connect("restart", url=server.url) as conn:
        job_id = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    assert started.wait(30)
    server.restart()  # the worker's two sessions are cut off while the handler runs
    go.set()
    with db.connect("restart", url=server.url) as conn:
        notify.listen(conn)
        deadline = time.monotonic() + 30
        while jobs.status(conn, tenant_id=1, job_id=job_id).state != "done":
            assert time.monotonic() < deadline, "the result never arrived"
            for _ in conn.notifies(timeout=0.2, stop_after=1):
                pass
        assert jobs.status(conn, tenant_id=1, job_id=job_id).output == "survived"
        assert [h["outcome"] for h in jobs.history(conn, job_id)] == ["done"]
    worker.stop()
    thread.join(30)
    assert worker.stats["disconnects"] >= 1 and worker.stats["finished"] == 1
