"""Embedded Redis servers: started once even when asked by two processes at once, stopped;
a stopped shared server stays down until a set-up path starts it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import redis
from serverkit import started_by_two_processes

from cachequeue import embedded_redis, shared
from cachequeue.errors import RedisUnavailable

pytestmark = [pytest.mark.redis, pytest.mark.private_server,  # servers of its own homes
              pytest.mark.usefixtures("redis_binary")]

def test_two_processes_starting_one_folder_share_one_server(tmp_path):
    server = embedded_redis.Server(tmp_path / "redis")
    with started_by_two_processes("cachequeue.embedded_redis", server):
        client = shared.connect(server.url)
        config = {name: client.config_get(name)[name] for name in ("port", "save", "appendonly")}
        assert config == {"port": "0", "save": "", "appendonly": "no"}  # socket only, no disk
        client.close()


def test_a_private_server_is_started_removes_its_folder_and_survives_a_freeze():
    with embedded_redis.Server.private() as server:
        assert server.folder.parent == embedded_redis.data_dir() / "throwaway"
        assert shared.connect(server.url).ping()
        folder = server.folder
        server.freeze()  # close() must still end it
    assert not folder.exists() and server.pid() is None


def test_restart_empties_it_and_stop_modes_are_checked():
    server = embedded_redis.Server.private()
    try:
        client = shared.connect(server.url)
        client.set("k", "1")
        pid = server.pid()
        server.restart("immediate")  # SIGKILL, like a crash: nothing was kept on disk
        assert server.pid() != pid and client.get("k") is None
        with pytest.raises(ValueError, match="mode must be one of"):
            server.stop("smart")
        client.close()
    finally:
        server.close()


def test_a_stopped_shared_server_stays_down_for_clients(tmp_path, monkeypatch):
    """Issue 18 item 8: a client never starts the embedded server; only set-up does."""
    monkeypatch.setenv("CACHEQUEUE_HOME", str(tmp_path))
    monkeypatch.delenv("REDIS_URL", raising=False)
    url = embedded_redis.redis_url(start=True)  # the set-up path
    client = shared.connect()
    try:
        assert client.ping()
        assert embedded_redis.stop() is True  # the operator stops it
        with pytest.raises(RedisUnavailable, match="run `make db`"):
            shared.connect()
        with pytest.raises(redis.ConnectionError):
            client.ping()  # the old client fails fast too, and reconnects to nothing
        assert embedded_redis.running_url() is None
        assert embedded_redis.redis_url(start=True) == url  # set-up starts it again
        assert client.ping()
    finally:
        client.close()
        embedded_redis.stop()


def test_the_command_line_reports_status(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEQUEUE_HOME", str(tmp_path))
    run = [sys.executable, "-m", "cachequeue.embedded_redis"]
    env_out = subprocess.run([*run, "status"], capture_output=True, text=True, check=True)
    assert env_out.stdout.startswith("not running")
    started = subprocess.run([*run, "start"], capture_output=True, text=True, check=True)
    assert started.stdout.strip() == f"unix://{tmp_path / '.redis' / 'redis.sock'}"
    stopped = subprocess.run([*run, "stop"], capture_output=True, text=True, check=True)
    assert stopped.stdout.strip() == "stopped"
