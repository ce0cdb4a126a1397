"""The shared embedded PostgreSQL of a checkout: started once when two processes ask at
once, made from the template, and never started by a client (issue 18 item 8): stopped by
an operator, it stays down; a client fails fast with one line that says `make db`; a worker
retries with backoff and stops promptly.

Every test runs in its own home (CACHEQUEUE_HOME, one per module: one initdb for the
template), never on the checkout's server, which other tests are using. The home is a
folder of its own under /tmp, not pytest's tmp_path: under root the server runs as another
user, who must be able to walk to it, and every pytest session that starts sets
/tmp/pytest-of-<user> back to mode 0700 (what made the starts-once test fail when another
test run began beside it).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

from cachequeue import db, embedded, queue
from cachequeue.errors import DatabaseUnavailable
from cachequeue.localserver import file_lock
from cachequeue.queue import RetryPolicy, Worker
from cachequeue.queue.logline import LOGGER

pytestmark = pytest.mark.private_server  # its own CACHEQUEUE_HOME, never DATABASE_URL


@pytest.fixture(scope="module")
def home():
    folder = Path(tempfile.mkdtemp(prefix="cq-home-"))
    yield folder
    env = {**os.environ, "CACHEQUEUE_HOME": str(folder)}
    subprocess.run([sys.executable, "-m", "cachequeue.embedded", "stop"], env=env,
                   capture_output=True, timeout=120)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def in_home(home, monkeypatch):
    """This process uses the module's home, with no DATABASE_URL: the embedded server."""
    monkeypatch.setenv("CACHEQUEUE_HOME", str(home))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)
    return home


def _make_db() -> str:
    """What `make db` does, in a process of its own (as it is): start the server."""
    done = subprocess.run([sys.executable, "-m", "cachequeue.embedded", "start"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _blocked_on(lock: Path, pids: set[int]) -> set[int]:
    """Which of `pids` wait for an flock on `lock` right now (Linux's /proc/locks)."""
    inode = f":{lock.stat().st_ino} "
    waiting = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and inode in line + " ":
            waiting.add(int(fields[fields.index("->") + 4]))
    return waiting & pids


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_embedded_server_starts_once_for_two_processes_and_listens_on_a_socket_only(home):
    """Deterministic: this test holds the start lock until both processes are blocked on
    it, so both take the contended path every time; then exactly one starts the server."""
    env = {**os.environ, "CACHEQUEUE_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    assert subprocess.run([sys.executable, "-m", "cachequeue.embedded", "stop"], env=env,
                          capture_output=True, text=True, timeout=120).returncode == 0
    lock = home / ".pgdata" / "start.lock"
    cmd = [sys.executable, "-m", "cachequeue.embedded", "start"]
    with file_lock(lock):
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        pids = {p.pid for p in procs}
        deadline = time.monotonic() + 120
        while _blocked_on(lock, pids) != pids:  # a condition, not a guess at a duration
            assert all(p.poll() is None for p in procs), "a start did not wait for the lock"
            assert time.monotonic() < deadline, "the two starts never reached the lock"
            time.sleep(0.01)
    urls = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        urls.append(out.strip())
    assert urls[0] == urls[1] and "host=" in urls[0]
    with psycopg.connect(urls[0]) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone()[0] == ""
        assert conn.info.server_version >= 180000
    # Started once: since the last shutdown, the server log saw one start, not two.
    log = (home / ".pgdata" / "data" / "log").read_text()
    since_stop = log.rsplit("database system is shut down", 1)[-1]
    assert since_stop.count("database system is ready to accept connections") == 1, since_stop
    stop = subprocess.run([sys.executable, "-m", "cachequeue.embedded", "stop"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert stop.stdout.strip() == "stopped", stop.stderr


def test_the_data_folder_is_a_copy_of_the_template_made_once(in_home):
    embedded.start()
    template = in_home / ".pgdata" / "template"
    assert (template / "version").read_text().startswith("postgres (PostgreSQL) 18")
    made = (template / "data" / "PG_VERSION").stat().st_ino
    with embedded.Server.private() as server:
        assert server.folder.parent == in_home / ".pgdata" / "throwaway"
        with db.connect(url=server.url) as conn:
            settings = {name: conn.execute(f"SHOW {name}").fetchone()[0]
                        for name in ("fsync", "max_connections", "listen_addresses")}
        assert settings == {"fsync": "off", "max_connections": "60", "listen_addresses": ""}
    with db.connect() as conn:  # the shared server keeps PostgreSQL's defaults
        assert conn.execute("SHOW fsync").fetchone()[0] == "on"
    assert (template / "data" / "PG_VERSION").stat().st_ino == made, "not rebuilt"


def test_a_template_of_another_version_is_rebuilt(in_home):
    template = in_home / ".pgdata" / "template"
    embedded.Server.private().close()  # the template exists
    (template / "version").write_text("postgres (PostgreSQL) 17.0; initdb --old\n")
    (template / "data" / "PG_VERSION").write_text("17\n")  # a server 18 would refuse this
    with embedded.Server.private() as server, db.connect(url=server.url) as conn:
        assert conn.info.server_version >= 180000
    assert (template / "version").read_text().startswith("postgres (PostgreSQL) 18")
    assert (template / "data" / "PG_VERSION").read_text() == "18\n"
    assert not list(template.parent.glob("template-*")), "no half-built template is left"


def test_an_empty_data_folder_is_filled_and_a_foreign_one_is_left_alone(in_home):
    failed = embedded.Server(in_home / "servers" / "a")
    (failed.data).mkdir(parents=True)  # what a start that failed before initdb leaves
    (failed.folder / ".data.copy-1").mkdir()  # and a copy that was interrupted
    with failed:
        assert failed.running and (failed.data / "PG_VERSION").exists()
    assert not (failed.folder / ".data.copy-1").exists()
    foreign = embedded.Server(in_home / "servers" / "b")
    foreign.data.mkdir(parents=True)
    (foreign.data / "notes.txt").write_text("mine")
    with pytest.raises(DatabaseUnavailable, match="no PostgreSQL data folder"):
        foreign.start()
    assert [p.name for p in foreign.data.iterdir()] == ["notes.txt"]


def test_a_stopped_server_stays_down_and_a_client_fails_fast(in_home):
    _make_db()
    conn = db.connect()
    assert conn.execute("SELECT 1").fetchone()[0] == 1
    assert embedded.stop() is True  # an operator's `pg_ctl stop -m fast`
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    conn.close()
    began = time.monotonic()
    for _ in range(3):
        with pytest.raises(DatabaseUnavailable) as caught:
            db.connect()
    assert time.monotonic() - began < 5.0, "a client waited instead of failing"
    message = str(caught.value)
    assert "\n" not in message and "run `make db`" in message and "DATABASE_URL" in message
    with pytest.raises(DatabaseUnavailable, match="not running"):
        db.database_url()
    assert embedded.running_url() is None and embedded.Server(in_home / ".pgdata").pid() is None
    # The set-up command starts it again.
    env = {**os.environ, "CACHEQUEUE_HOME": str(in_home)}
    setup = subprocess.run([sys.executable, "-m", "cachequeue.db"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert setup.returncode == 0 and setup.stdout.startswith("database: PostgreSQL 18"), setup.stderr
    assert embedded.running_url() is not None


class _Reconnects(logging.Handler):
    """Sets `failed` once the worker has logged `reconnecting` `times` times."""

    def __init__(self, times: int) -> None:
        super().__init__(logging.INFO)
        self.times, self.lines, self.failed = times, [], threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        if " reconnecting " in line:
            self.lines.append(line)
            if len(self.lines) >= self.times:
                self.failed.set()


class _SoonThenLong(RetryPolicy):
    """Reconnect almost at once after the first three failures, then wait ten minutes:
    a worker that stops within the test's bound was woken by stop(), not by its backoff."""

    def delay(self, attempt: int, rng=None) -> float:
        return 0.01 if attempt < 4 else 600.0


def test_a_worker_retries_during_the_outage_and_stops_promptly(in_home):
    _make_db()
    with db.connect() as conn:
        db.reset_schema(conn, "outage", queue.install)
    seen = _Reconnects(times=4)
    LOGGER.addHandler(seen)
    level = LOGGER.level
    LOGGER.setLevel(logging.INFO)
    worker = Worker(lambda: db.connect("outage"), {"noop": lambda payload: None},
                    name="outage", lease=5, poll=0.2, backoff=_SoonThenLong())
    thread = threading.Thread(target=worker.run, daemon=True)
    try:
        thread.start()
        assert worker.ready.wait(60)
        embedded.stop()  # the operator stops the database under a running worker
        # Its connection breaks, then each reconnect fails at once: the fourth failure
        # means three attempts to connect were made while the server was down.
        assert seen.failed.wait(60), seen.lines
        assert embedded.running_url() is None, "a worker's reconnect started the server"
        assert any("run `make db`" in line for line in seen.lines), seen.lines
        # Now it waits 600 s before its next attempt: stop() must end that wait.
        worker.stop()
        thread.join(60)
    finally:
        LOGGER.removeHandler(seen)
        LOGGER.setLevel(level)
        worker.stop()
    assert not thread.is_alive(), "stop() did not end the reconnect backoff"
    assert "retry_in=600" in seen.lines[-1], seen.lines
    assert worker.stats["disconnects"] >= 4
    assert embedded.running_url() is None
