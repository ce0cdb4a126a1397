"""In-process timers die with their process; a persisted job does not (a real subprocess).

`python -m cachequeue.course.procs.timers --schema ch03 --out DIR --delay SECONDS` is a tiny "server"
that accepts one piece of work twice over: it persists a job with `jobs.submit`, and it
also schedules the same work in memory with `threading.Timer` and asyncio's `call_later`.
It then prints one JSON line (`{"pid": ..., "job_id": ...}`) and waits for its timers;
each timer, when it fires, writes a marker file into DIR, and the process exits once both
have fired.

`start()` runs it as a child process and returns once the job is committed and both
timers are scheduled, so a notebook can kill it (SIGKILL) at that exact point and then
look at what survived: no marker file, but the job row, still pending and claimable.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

from ...checks import check_instance, check_seconds

__all__ = ["MARKERS", "fired", "main", "start"]

# Marker file written by each kind of timer when it fires.
MARKERS = {"threading.Timer": "thread.fired", "asyncio.call_later": "asyncio.fired"}


def fired(out: str | os.PathLike) -> list[str]:
    """The timers whose marker file exists in `out` (sorted names from MARKERS)."""
    folder = Path(out)
    return sorted(name for name, marker in MARKERS.items() if (folder / marker).exists())


def start(schema: str, out: str | os.PathLike, *, delay: float, tenant_id: int = 1,
          at: datetime | None = None, timeout: float = 60.0) -> tuple[subprocess.Popen, int]:
    """Run the demo as a child process; return (process, job_id) once it reports ready.

    The child inherits the environment (DATABASE_URL, or the embedded server). With `at`,
    its database clock is frozen there (`db.set_clock`) before it submits, so the job's
    times fit a notebook that runs on a ManualClock. If the child exits or stays silent
    for `timeout` seconds, it is killed and RuntimeError says why.
    """
    delay = check_seconds(delay, "delay", allow_zero=True)
    if at is not None and check_instance(at, "at", datetime).tzinfo is None:
        raise ValueError(f"at must be a timezone-aware datetime or None, got {at!r}")
    cmd = [sys.executable, "-m", "cachequeue.course.procs.timers", "--schema", schema, "--out", str(out),
           "--delay", repr(delay), "--tenant", str(tenant_id)]
    if at is not None:
        cmd += ["--at", at.isoformat()]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"timer demo did not start (exit {proc.returncode}): {err.strip()}")
    return proc, json.loads(line)["job_id"]


def _marker_writer(out: Path, name: str):
    def write() -> None:
        (out / MARKERS[name]).write_text(f"{name} fired in process {os.getpid()}\n")
    return write


async def _serve(out: Path, delay: float, job_id: int) -> None:
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    write_async = _marker_writer(out, "asyncio.call_later")

    def on_timer() -> None:
        write_async()
        done.set()

    thread_timer = threading.Timer(delay, _marker_writer(out, "threading.Timer"))
    thread_timer.start()
    loop.call_later(delay, on_timer)
    # Ready only now: the job is committed and both timers are scheduled.
    print(json.dumps({"pid": os.getpid(), "job_id": job_id}), flush=True)
    await done.wait()
    await asyncio.to_thread(thread_timer.join)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--delay", required=True, type=float)
    parser.add_argument("--tenant", type=int, default=1)
    parser.add_argument("--at", type=datetime.fromisoformat, default=None)
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out must be an existing folder, got {args.out}")
    from ... import db
    from ...queue import jobs

    with db.connect(args.schema) as conn:
        if args.at is not None:
            db.set_clock(conn, args.at)
        job_id = jobs.submit(conn, tenant_id=args.tenant, kind="summarise",
                             payload={"document_id": 1, "version": 1})
    asyncio.run(_serve(args.out, args.delay, job_id))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
