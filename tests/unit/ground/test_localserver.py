"""The shape both embedded servers share (cachequeue.localserver), without starting one:
pid files, locks, short socket paths, the command line, the mode check, paths as printed."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cachequeue import embedded, embedded_nats, embedded_redis
from cachequeue.errors import DatabaseUnavailable
from cachequeue.localserver import (
    LocalServer,
    command_line,
    file_lock,
    live_pid,
    shown,
    socket_path,
)

CHECKOUT = Path(__file__).resolve().parents[3]


def test_shown_paths_name_no_machine():
    temp = Path(tempfile.gettempdir()).resolve()
    assert shown(CHECKOUT / ".pgdata" / "data") == ".pgdata/data"
    assert shown(CHECKOUT) == "."
    assert shown(f"Error 2 connecting to {temp}/cq-redis-x/redis.sock.") == \
        "Error 2 connecting to $TMPDIR/cq-redis-x/redis.sock."
    assert shown(Path.home() / "notes") == "~/notes"
    sibling = f"{CHECKOUT}-other/x"  # a folder that only starts like the checkout
    assert shown(sibling).endswith("-other/x") and not shown(sibling).startswith("-other")


def test_the_servers_sources_are_relative_to_the_checkout(monkeypatch):
    monkeypatch.delenv("CACHEQUEUE_HOME", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert (embedded.source(), embedded_redis.source()) == ("embedded, .pgdata/data", "embedded, .redis")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u@h/db")
    monkeypatch.setenv("REDIS_URL", "redis://h/0")
    assert (embedded.source(), embedded_redis.source()) == ("DATABASE_URL", "REDIS_URL")


def test_live_pid_names_only_a_live_process(tmp_path):
    pid_file = tmp_path / "x.pid"
    assert live_pid(pid_file) is None  # no file
    pid_file.write_text("not a pid\n")
    assert live_pid(pid_file) is None
    pid_file.write_text(f"{os.getpid()}\n/some/folder\n")
    assert live_pid(pid_file) == os.getpid()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    pid_file.write_text(f"{child.pid}\n")
    assert live_pid(pid_file) is None  # ended (and reaped)


def test_a_zombie_counts_as_gone(tmp_path):
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: a zombie
    (tmp_path / "z.pid").write_text(f"{child.pid}\n")
    try:
        assert live_pid(tmp_path / "z.pid") is None
    finally:
        child.wait()


# A child whose main thread ends (pthread_exit) while another thread holds a listening port
# and ends the process when told: the shape of a killed threaded server whose main thread is
# a zombie before its other threads have closed its files.
_MAIN_THREAD_ENDS_FIRST = """
import ctypes, socket, sys, threading
held = socket.socket()
held.bind(("127.0.0.1", 0))
held.listen()
print(held.getsockname()[1], flush=True)
def last_thread():
    sys.stdin.readline()
    ctypes.CDLL(None)._exit(0)
threading.Thread(target=last_thread).start()
ctypes.CDLL(None).pthread_exit(None)
"""


def test_a_zombie_main_thread_counts_as_alive_while_another_thread_holds_its_ports(tmp_path):
    if not Path("/proc/self/task").exists():
        pytest.skip("needs /proc")
    child = subprocess.Popen([sys.executable, "-c", _MAIN_THREAD_ENDS_FIRST],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = int(child.stdout.readline())
    (tmp_path / "t.pid").write_text(f"{child.pid}\n")
    try:
        stat = Path(f"/proc/{child.pid}/stat")
        for _ in range(500):  # the main thread's pthread_exit takes a moment
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                break
            time.sleep(0.01)
        assert stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
        assert live_pid(tmp_path / "t.pid") == child.pid  # its port is still held
        with socket.socket() as probe, pytest.raises(OSError):
            probe.bind(("127.0.0.1", port))
        child.stdin.write("end\n")
        child.stdin.flush()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # every thread gone
        assert live_pid(tmp_path / "t.pid") is None
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))  # and the port is free
    finally:
        child.kill()
        child.wait()


def test_shared_locks_coexist_and_an_exclusive_one_waits_for_them(tmp_path):
    lock = tmp_path / "sub" / "x.lock"
    with file_lock(lock, shared=True), open(lock) as other:
        fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another reader: fine
        fcntl.flock(other, fcntl.LOCK_UN)
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with file_lock(lock), open(lock) as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)


def test_a_deep_folder_gets_short_stable_socket_paths(tmp_path):
    deep = tmp_path / ("x" * 120)
    pg = embedded.Server(deep)
    assert len(str(pg.socket_dir / ".s.PGSQL.5432")) <= 100
    assert pg.socket_dir == embedded.Server(deep).socket_dir != pg.data
    assert embedded.Server(tmp_path).socket_dir == tmp_path / "data"
    assert socket_path(tmp_path / "s", deep, "cq-{}.sock") == tmp_path / "s"
    assert embedded_redis.Server(deep).socket != pg.socket_dir / ".s.PGSQL.5432"


def test_every_server_has_the_one_shape():
    """The lifecycle is written once (LocalServer); each server adds only how it runs. The
    one-process servers (Redis, NATS) share the locked start, freeze, thaw and the signals
    that stop them too, and add only how they launch; PostgreSQL starts through pg_ctl."""
    shared = ("private", "reap", "stop", "restart", "close", "__enter__", "__exit__")
    own = ("url", "running", "pid", "_stop", "private_parent")
    for cls in (embedded.Server, embedded_redis.Server, embedded_nats.Server):
        assert issubclass(cls, LocalServer)
        assert all(name not in vars(cls) for name in shared), cls
        assert all(name in vars(cls) for name in own), cls
    assert "start" in vars(embedded.Server)
    for cls in (embedded_redis.Server, embedded_nats.Server):
        assert "_launch" in vars(cls), cls
        assert all(name not in vars(cls) for name in ("start", "freeze", "thaw", "_signal")), cls
    with pytest.raises(ValueError, match=r"mode must be one of \('fast', 'immediate'\)"):
        embedded.Server("/nonexistent").stop("smart")  # checked before anything is looked at


def test_the_command_line_says_usage_and_errors_in_one_line(capsys, tmp_path):
    def fail():
        raise DatabaseUnavailable("could not start")

    args = {"prog": "x", "start": fail, "stop": lambda: False, "running_url": lambda: None,
            "folder": lambda: tmp_path, "errors": (DatabaseUnavailable,)}
    assert command_line(["nonsense"], **args) == 2
    assert capsys.readouterr().err == "usage: python -m x start|stop|status|url\n"
    assert command_line(["start"], **args) == 1
    assert capsys.readouterr().err == "x: could not start\n"
    assert command_line([], **args) == 0
    assert capsys.readouterr().out == f"not running (folder {tmp_path})\n"
    assert command_line(["url"], **args) == 1
    assert command_line(["stop"], **args) == 0
    assert capsys.readouterr().out == "\nnot running\n"
