"""Embedded Redis servers: started once even when asked by two processes at once, stopped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cachequeue import embedded_redis, shared
from cachequeue.errors import RedisUnavailable

START = "from cachequeue.embedded_redis import Server; import sys; print(Server(sys.argv[1]).start())"


@pytest.fixture(autouse=True)
def _needs_a_binary():
    try:
        embedded_redis.binary()
    except RedisUnavailable as exc:
        pytest.skip(str(exc))


def test_two_processes_starting_one_folder_share_one_server(tmp_path):
    server = embedded_redis.Server(tmp_path / "redis")
    try:
        procs = [subprocess.Popen([sys.executable, "-c", START, str(server.folder)],
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]
        urls = [proc.communicate(timeout=60)[0].strip() for proc in procs]
        assert urls == [server.url, server.url]
        assert server.running()
        pid = server.pid()
        assert server.start() == server.url and server.pid() == pid  # reused, not restarted
        client = shared.connect(server.url)
        config = {name: client.config_get(name)[name] for name in ("port", "save", "appendonly")}
        assert config == {"port": "0", "save": "", "appendonly": "no"}  # socket only, no disk
        client.close()
    finally:
        assert server.stop() is True
    assert not server.running() and server.pid() is None
    assert server.stop() is False


def test_a_private_server_removes_its_folder_and_survives_a_freeze():
    with embedded_redis.Server.private() as server:
        assert shared.connect(server.url).ping()
        folder = server.folder
        server.freeze()  # close() must thaw it to shut it down
    assert not folder.exists() and server.pid() is None


def test_the_command_line_reports_status(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEQUEUE_HOME", str(tmp_path))
    run = [sys.executable, "-m", "cachequeue.embedded_redis"]
    env_out = subprocess.run([*run, "status"], capture_output=True, text=True, check=True)
    assert env_out.stdout.startswith("not running")
    started = subprocess.run([*run, "start"], capture_output=True, text=True, check=True)
    assert started.stdout.strip() == f"unix://{tmp_path / '.redis' / 'redis.sock'}"
    stopped = subprocess.run([*run, "stop"], capture_output=True, text=True, check=True)
    assert stopped.stdout.strip() == "stopped"
