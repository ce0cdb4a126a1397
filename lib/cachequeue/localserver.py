"""What the two embedded servers (PostgreSQL, Redis) share: where they live, a file lock, a
pid check, private instances that are reaped after their owner dies, one command line.

`LocalServer` is the shape of both `embedded.Server` and `embedded_redis.Server`: a server
process of its own folder, started with `start()` (idempotent, serialised across processes
by a file lock), stopped with `stop(mode)` ('fast': a clean shutdown; 'immediate': like a
crash), `restart(mode)`, `url`, `running`, and `close()`. `Server.private()` makes one in a
fresh folder of its own, started, that `close()` (or leaving its `with` block) deletes; a
folder whose owning process has died is removed, with its server, by the next `private()`.

Nothing here starts a server behind a client's back: only set-up paths call `start()`.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

from .checks import check_bool, check_choice

__all__ = ["MODES", "LocalServer", "command_line", "file_lock", "home", "live_pid", "shown",
           "socket_path"]

MODES = ("fast", "immediate")
_SOCKET_MAX = 100  # sun_path holds 108 bytes; keep a margin


def home() -> Path:
    """The folder that holds `.pgdata/` and `.redis/`: $CACHEQUEUE_HOME, else the checkout
    (when the library runs from one), else ~/.cachequeue."""
    if env := os.environ.get("CACHEQUEUE_HOME"):
        return Path(env).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        return checkout
    return Path.home() / ".cachequeue"


def shown(text: str | os.PathLike) -> str:
    """`text` (a path, or a message that names paths) as it reads from any clone on any
    machine: the checkout's own folder is left out ('/x/course/.pgdata/data' ->
    '.pgdata/data'), the temp folder becomes '$TMPDIR' and the user's home folder '~'.
    For what the course prints (committed outputs must not name the machine that ran them);
    code that opens a path keeps the absolute one."""
    text = os.fspath(text)
    temp = Path(tempfile.gettempdir())
    for folder, name in ((Path(__file__).resolve().parents[2], "."), (temp.resolve(), "$TMPDIR"),
                         (temp, "$TMPDIR"), (Path.home(), "~")):
        folder = str(folder).rstrip("/")
        if folder:
            text = text.replace(folder + "/", "" if name == "." else name + "/")
            text = name if text == folder else text
    return text


def source_of(variable: str, folder: Path) -> str:
    """Where a server of the course comes from, as any clone reads it: the environment
    variable's name when it is set (it always wins), else 'embedded, <folder>' (relative to
    the checkout)."""
    if os.environ.get(variable, "").strip():
        return variable
    return f"embedded, {shown(folder)}"


def socket_path(wanted: Path, folder: Path, name: str) -> Path:
    """`wanted` if that path is short enough for a Unix socket, else a short path of
    `folder`'s own under the temp folder (`name` with a digest of `folder` in it)."""
    if len(str(wanted)) <= _SOCKET_MAX:
        return wanted
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / name.format(digest)


@contextlib.contextmanager
def file_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold an flock on `path` (created if missing): exclusive, or shared with `shared`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def live_pid(pid_file: Path) -> int | None:
    """The process id on the first line of `pid_file` if that process is alive, else None."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (FileNotFoundError, NotADirectoryError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's (the PostgreSQL server runs as its own user under root)
    # A killed daemon stays a zombie until init reaps it: it is gone all the same, once its
    # other threads are gone too. The main thread of a threaded server (nats-server, in Go)
    # turns zombie first, and the files and ports it shares with its other threads close
    # only when the last of them has exited (seen: a restart's "address already in use").
    try:
        zombie = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        if zombie and len(os.listdir(f"/proc/{pid}/task")) <= 1:
            return None
    except (OSError, IndexError):
        pass  # no /proc (macOS), or it ended just now
    return pid


class LocalServer:
    """A server process of its own folder (see the module docstring). Subclasses give
    `url`, `running`, `pid()`, `start()`, `_stop(mode)`, and where private folders go."""

    PRIVATE_PREFIX: ClassVar[str] = "srv-"
    PRIVATE_OPTIONS: ClassVar[dict[str, Any]] = {}

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).resolve()
        self._owner: int | None = None  # the pid that made a private server, else None

    # ------------------------------------------------------------------ subclasses

    @classmethod
    def private_parent(cls) -> Path:
        """The folder that holds this kind's private servers."""
        raise NotImplementedError

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        raise NotImplementedError

    def pid(self) -> int | None:
        """The server's process id if it is alive, else None."""
        raise NotImplementedError

    def start(self) -> str:
        """Start the server unless it runs; return its URL once it accepts connections.
        Two processes starting one folder's server at once are serialised by a file lock:
        the second finds it running."""
        if self.running:
            return self.url
        with file_lock(self.folder / "start.lock"):
            if not self.running:  # else another process started it while we waited
                self._launch()
        return self.url

    def _launch(self) -> None:
        """Start the server process and return once it answers (under the start lock)."""
        raise NotImplementedError

    def _stop(self, mode: str) -> None:
        raise NotImplementedError

    def _remove(self) -> None:
        """Delete a private server's files (its folder; a subclass adds what lives elsewhere)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    # ------------------------------------------------------------------ by signals
    # For a server that is one process of ours (redis-server, nats-server): the kind names
    # its program and the error for "not running" (PROGRAM, UNAVAILABLE).

    PROGRAM: ClassVar[str] = "server"
    UNAVAILABLE: ClassVar[type[Exception]] = RuntimeError

    def freeze(self) -> None:
        """Stop the server process with SIGSTOP: it keeps its sockets and its data but
        answers nothing, like a server stuck in a long pause. `thaw()` resumes it."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """Resume a frozen server (SIGCONT)."""
        self._signal(signal.SIGCONT)

    def _signal(self, sig: signal.Signals) -> None:
        pid = self.pid()
        if pid is None:
            raise self.UNAVAILABLE(f"no {self.PROGRAM} is running in {shown(self.folder)}")
        os.kill(pid, sig)

    def _signal_until_gone(self, pid: int, signals: Sequence[signal.Signals | None],
                           timeout: float) -> None:
        """Send each of `signals` in turn (None: send none, only wait), each after a SIGCONT
        (a frozen process cannot act on SIGTERM), until process `pid` is gone; up to
        `timeout` seconds for each."""
        for sig in signals:
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, sig)
            deadline = time.monotonic() + timeout
            while self.pid() == pid and time.monotonic() < deadline:
                time.sleep(0.01)
            if self.pid() != pid:
                return

    # ------------------------------------------------------------------ the shape

    @classmethod
    def private(cls, **options: Any) -> Self:
        """A started server in a fresh folder of its own, deleted again by `close()`.
        `options` go to the constructor, over the kind's PRIVATE_OPTIONS."""
        parent = cls.private_parent()
        parent.mkdir(parents=True, exist_ok=True)
        cls.reap(parent)
        # Made under a name the reaper does not look at, then renamed: a folder with the
        # prefix always has its owner.pid.
        fresh = Path(tempfile.mkdtemp(prefix=".new-", dir=parent))
        (fresh / "owner.pid").write_text(f"{os.getpid()}\n")
        folder = parent / (cls.PRIVATE_PREFIX + fresh.name.removeprefix(".new-"))
        fresh.rename(folder)
        server = cls(folder, **{**cls.PRIVATE_OPTIONS, **options})
        server._owner = os.getpid()
        atexit.register(server._close_at_exit)  # a kernel restarted mid-section leaves nothing
        try:
            server.start()
        except BaseException:
            server.close()
            raise
        return server

    @classmethod
    def reap(cls, parent: Path) -> None:
        """Remove private servers under `parent` whose owning process is gone."""
        for folder in parent.glob(cls.PRIVATE_PREFIX + "*"):
            if live_pid(folder / "owner.pid") is not None:
                continue
            orphan = cls(folder)
            with contextlib.suppress(Exception):  # a server that will not stop: remove anyway
                orphan.stop("immediate")
            orphan._remove()

    def stop(self, mode: str = "fast") -> bool:
        """Stop the server: 'fast' (sessions ended, a clean shutdown) or 'immediate' (like a
        crash). Returns False if it was not running."""
        check_choice(mode, "mode", MODES)
        if self.pid() is None:
            return False
        self._stop(mode)
        return True

    def restart(self, mode: str = "fast") -> str:
        """Stop, then start again: every session is cut off; return the URL."""
        self.stop(mode)
        return self.start()

    def close(self) -> None:
        """Stop the server at once; a private server's folder is deleted too."""
        if self._owner is not None:
            atexit.unregister(self._close_at_exit)
        if self.folder.exists():
            self.stop("immediate")
        if self._owner is not None:
            self._remove()

    def _close_at_exit(self) -> None:
        if os.getpid() == self._owner:  # not in a forked child
            self.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"{type(self).__name__}({str(self.folder)!r}, {state})"


class Shared:
    """The shared server of one kind, the one in its folder inside the checkout, as the module
    functions `running_url()`, `start()`, `stop()` and the client's `url(start=)` give it
    (embedded_redis, embedded_nats). `server` makes the LocalServer of that folder;
    `variable` names the environment variable that wins over it (its form checked by
    `check`, which raises on a bad one); a client that finds the server stopped gets
    `unavailable` naming `what`, after `binary()` had its say (no server binary at all: that
    message says what to do instead)."""

    def __init__(self, server: Callable[[], LocalServer], *, variable: str,
                 check: Callable[[str], str], unavailable: type[Exception], what: str,
                 binary: Callable[[], object]) -> None:
        self._server = server
        self._variable, self._check = variable, check
        self._unavailable, self._what, self._binary = unavailable, what, binary

    def running_url(self) -> str | None:
        """The shared server's URL if it is up, else None (never starts it)."""
        server = self._server()
        return server.url if server.running else None

    def start(self) -> str:
        """Start the shared server if needed and return its URL. A set-up step: clients
        never call it."""
        return self._server().start()

    def stop(self) -> bool:
        """Stop the shared server (fast). Returns False if it was not running."""
        return self._server().stop("fast")

    def url(self, *, start: bool = False) -> str:
        """The variable from the environment if set (as `check` passes it), else the shared
        server's URL. The shared server is started here only when `start` is True (the
        set-up paths); a client that finds it stopped gets `unavailable` raised (which says
        to run `make db`), and the server stays down."""
        check_bool(start, "start")
        if url := os.environ.get(self._variable, "").strip():
            return self._check(url)
        if start:
            return self.start()
        if found := self.running_url():
            return found
        self._binary()
        raise self._unavailable(f"{self._what} is not running (folder "
                                f"{self._server().folder}): run `make db` to start it, "
                                f"or set {self._variable}")


def command_line(argv: list[str], *, prog: str, start: Callable[[], str],
                 stop: Callable[[], bool], running_url: Callable[[], str | None],
                 folder: Callable[[], Path], errors: tuple[type[BaseException], ...]) -> int:
    """`python -m <prog> start|stop|status|url` for the shared embedded server of a module:
    `start` prints the URL, `url` prints it (exit 1 if not running), `status` says whether
    it runs. A failure in `errors` is one line on stderr and exit status 1."""
    actions: dict[str, Callable[[], str]] = {
        "start": start,
        "stop": lambda: "stopped" if stop() else "not running",
        "status": lambda: (f"running: {url}" if (url := running_url())
                           else f"not running (folder {folder()})"),
        "url": lambda: running_url() or "",
    }
    action = argv[0] if argv else "status"
    if action not in actions or len(argv) > 1:
        print(f"usage: python -m {prog} {'|'.join(actions)}", file=sys.stderr)
        return 2
    try:
        said = actions[action]()
    except errors as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    print(said)
    return 1 if action == "url" and not said else 0
