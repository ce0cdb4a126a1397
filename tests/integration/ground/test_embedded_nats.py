"""Embedded nats-servers: the shared one started once even when asked by two processes at once,
stopped and left down for clients; private ones with JetStream and a store of their own; a
three-node cluster that elects a leader, keeps an R3 stream through a killed node and
refuses writes without a quorum; the one-line errors for a broker that is not there."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import nats.errors
import nats.js.errors
import pytest
from serverkit import started_by_two_processes

from cachequeue import embedded_nats, servers
from cachequeue.errors import ConfigurationError, NatsUnavailable

pytestmark = [pytest.mark.nats, pytest.mark.private_server,  # servers of its own
              pytest.mark.usefixtures("nats_binary")]

async def _retried(call):
    """`call()` until it succeeds: a killed stream leader is replaced within seconds, and
    until then a request finds no responder or times out (bounded: 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return await call()
        except (nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _publish_and_count(url: str, stream: str, n: int, *, replicas: int = 1,
                             create: bool = True) -> int:
    client = await embedded_nats.connect(url)
    try:
        js = client.jetstream(timeout=5)
        if create:
            await js.add_stream(name=stream, subjects=[f"{stream}.>"], num_replicas=replicas)
        first = (await _retried(lambda: js.stream_info(stream))).state.messages
        for i in range(first, first + n):  # retried under its message id: stored once
            await _retried(lambda i=i: js.publish(f"{stream}.job", str(i).encode(),
                                                  headers={"Nats-Msg-Id": str(i)}))
        return (await _retried(lambda: js.stream_info(stream))).state.messages
    finally:
        await client.close()


def test_two_processes_starting_one_folder_share_one_server(tmp_path):
    server = embedded_nats.Server(tmp_path / "nats")
    with started_by_two_processes("cachequeue.embedded_nats", server):
        assert server.url.startswith("nats://127.0.0.1:")  # loopback only
        said = embedded_nats.info(server.url)
        assert said["jetstream"] is True and said["host"] == "127.0.0.1"
        varz = server.monitor("varz")
        assert varz["http_host"] == "127.0.0.1" and varz["jetstream"]["config"]["store_dir"] \
            == str(server.store_dir / "jetstream")


def test_a_private_server_keeps_its_ports_and_its_file_store_across_a_kill():
    with embedded_nats.Server.private() as server:
        assert server.folder.parent == embedded_nats.data_dir() / "throwaway"
        url = server.url
        assert asyncio.run(_publish_and_count(url, "KEEP", 5)) == 5
        assert server.kill() is True and not server.running
        assert server.start() == url  # the same port after a crash
        assert asyncio.run(_publish_and_count(url, "KEEP", 1, create=False)) == 6  # none lost
        folder = server.folder
        server.freeze()  # close() must still end it
    assert not folder.exists() and server.pid() is None


def test_a_private_server_without_jetstream_and_one_with_its_own_store(tmp_path):
    with embedded_nats.Server.private(jetstream=False) as plain:
        assert embedded_nats.info(plain.url).get("jetstream") is not True
    store = tmp_path / "store"
    with embedded_nats.Server.private(store_dir=store) as server:
        assert asyncio.run(_publish_and_count(server.url, "OWN", 2)) == 2
        assert server.store_dir == store.resolve() and any(store.rglob("*"))


def test_a_stopped_shared_server_stays_down_for_clients(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEQUEUE_HOME", str(tmp_path))
    monkeypatch.delenv("NATS_URL", raising=False)
    url = embedded_nats.nats_url(start=True)  # the set-up path
    try:
        assert embedded_nats.running_url() == url
        assert embedded_nats.source().startswith("embedded, ") and \
            embedded_nats.source().endswith(".nats")
        assert embedded_nats.nats_url() == url  # a client finds it running
        assert servers._nats_line(url).startswith("NATS 2.")
    finally:
        assert embedded_nats.stop() is True  # the operator stops it
    assert embedded_nats.running_url() is None
    with pytest.raises(NatsUnavailable, match=r"not running .*run `make db`.*NATS_URL"):
        embedded_nats.nats_url()
    assert embedded_nats.running_url() is None  # ... and it stayed down
    status = subprocess.run([sys.executable, "-m", "cachequeue.embedded_nats", "status"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "CACHEQUEUE_HOME": str(tmp_path)})
    assert status.returncode == 0 and status.stdout.startswith("not running")


def test_an_unreachable_broker_is_one_line_naming_nats_url_and_make_db(monkeypatch):
    port = embedded_nats.free_ports(1)[0]  # nothing listens there
    monkeypatch.setenv("NATS_URL", f"nats://127.0.0.1:{port}")
    with pytest.raises(NatsUnavailable) as caught:
        asyncio.run(embedded_nats.connect(timeout=1))
    message = str(caught.value)
    assert embedded_nats.source() == "NATS_URL"
    assert "\n" not in message and f"nats://127.0.0.1:{port}" in message
    assert "(NATS_URL)" in message and "unset NATS_URL and run `make db`" in message
    with pytest.raises(NatsUnavailable, match="cannot reach NATS"):
        embedded_nats.info(f"nats://127.0.0.1:{port}", timeout=1)


def test_malformed_urls_and_bad_options_are_refused(monkeypatch, tmp_path):
    for bad in ("http://127.0.0.1:4222", "127.0.0.1:4222", "nats://127.0.0.1:99999",
                "nats://a:4222,redis://b"):
        monkeypatch.setenv("NATS_URL", bad)
        with pytest.raises(ConfigurationError, match="NATS_URL is malformed"):
            embedded_nats.nats_url()
    monkeypatch.setenv("NATS_URL", "nats://a:4222, nats://b:4222")
    assert embedded_nats.nats_url() == "nats://a:4222, nats://b:4222"
    with pytest.raises(TypeError, match="port must be an int"):
        embedded_nats.Server(tmp_path, port="4222")
    with pytest.raises(ValueError, match="routes need cluster_name"):
        embedded_nats.Server(tmp_path, routes=[6222])
    with pytest.raises(TypeError, match="routes must be cluster ports"):
        embedded_nats.Server(tmp_path, cluster_name="c", routes="6222")
    with pytest.raises(ValueError, match="n must be >= 1"):
        embedded_nats.cluster(0)
    with pytest.raises(ValueError, match="mode must be one of"):
        embedded_nats.Server(tmp_path).stop("smart")
    with pytest.raises(TypeError, match="start must be True or False"):
        embedded_nats.nats_url(start=1)


def test_free_ports_are_distinct():
    ports = embedded_nats.free_ports(12)
    assert len(set(ports)) == 12 and all(1024 <= p <= 65535 for p in ports)


def test_a_three_node_cluster_survives_one_killed_node_and_refuses_writes_without_quorum(
        nats_cluster):
    nodes = nats_cluster
    assert nodes.running() == [0, 1, 2] and nodes.leader() in (0, 1, 2)
    assert asyncio.run(_publish_and_count(nodes.url, "R3", 10, replicas=3)) == 10
    victim = (nodes.leader() + 1) % 3  # a follower of the meta group
    assert nodes.kill(victim) is True
    assert nodes.running() == sorted({0, 1, 2} - {victim})
    survivors = ",".join(nodes.urls[i] for i in nodes.running())
    assert asyncio.run(_publish_and_count(survivors, "R3", 5, create=False)) == 15
    nodes.start(victim)
    assert nodes.running() == [0, 1, 2]
    assert nodes.wait_for_leader(30) in (0, 1, 2)
    # Two of three down: the one left cannot make a quorum and refuses the write.
    alone = nodes.leader()
    for i in {0, 1, 2} - {alone}:
        nodes.kill(i)

    async def write_alone():
        client = await embedded_nats.connect(nodes.urls[alone])
        try:
            await client.jetstream(timeout=2).publish("R3.job", b"x")
        finally:
            await client.close()

    with pytest.raises((nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError,
                        nats.js.errors.APIError)):
        asyncio.run(write_alone())


def test_a_restart_waits_out_a_port_held_for_a_moment():
    """A killed server restarts on its own ports; if another process holds one of them for
    a moment (another test's free_ports probing it), the start is tried again."""
    import socket
    import threading

    with embedded_nats.Server.private() as server:
        server.kill()
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT, as Go does
        held.bind(("127.0.0.1", server.settings()["http_port"]))
        held.listen()
        threading.Timer(0.3, held.close).start()
        assert server.start() == server.url and server.running
        assert "address already in use" in (server.folder / "nats.log").read_text()
