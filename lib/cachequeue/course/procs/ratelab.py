"""A vendor's quota across real processes: no limit, a limit in each process, one in the database.

`starts_per_second(conn, "ch08", limit="database", per_second=3)` starts `processes`
claimer processes (`python -m cachequeue.course.procs.ratelab`), each with its own
connection and its own memory, and steps them in lockstep through `seconds` seconds of a
manual clock: every second each process is told the instant and asks for `ask` noop jobs
(who asks first alternates), and answers how many it claimed. Nothing sleeps and nothing
races: a process acts only when told, on the database clock it was given
(`db.set_clock`), so every run gives the same counts. `limit` is what stands between the
processes and the jobs:

- "none": `jobs.claim_many` (ask = take);
- "local": a token bucket in each process's memory (`LocalBucket`), refilled from the
  instants it is given, which is how a limiter inside a worker behaves: N processes make
  N times the quota;
- "database": `queue.ratelimit.claim_limited`, the bucket in one row that every process
  draws from under its row lock.

The processes say their pid and their connection's backend pid first, so a notebook can
show they are distinct processes with distinct sessions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import datetime
from typing import Any

import psycopg

from ... import db
from ...checks import check_choice, check_finite, check_int, check_text
from ...clock import ManualClock
from ...queue import jobs, ratelimit
from ..labs.opsday import clear
from ..probes import plans

__all__ = ["LIMITS", "Claimer", "LocalBucket", "starts_per_second"]

LIMITS = ("none", "local", "database")


class LocalBucket:
    """A token bucket in one process's memory: `per_second` tokens a second, at most
    `burst`, refilled from the instants passed to `take` (seconds)."""

    def __init__(self, per_second: float, burst: float) -> None:
        self.per_second = check_finite(per_second, "per_second")
        self.burst = check_finite(burst, "burst")
        self.tokens = self.burst
        self.at: float | None = None

    def take(self, now: float, want: int) -> int:
        """Refill for the time since the last call, then take up to `want` whole tokens."""
        if self.at is not None:
            self.tokens = min(self.burst, self.tokens + self.per_second * max(0.0, now - self.at))
        self.at = now if self.at is None else max(self.at, now)
        granted = min(want, int(self.tokens))
        self.tokens -= granted
        return granted


class Claimer:
    """One claimer child process, driven line by line over its stdin and stdout."""

    def __init__(self, schema: str, *, limit: str, per_second: float, url: str | None = None) -> None:
        cmd = [sys.executable, "-m", "cachequeue.course.procs.ratelab",
               "--schema", check_text(schema, "schema"),
               "--limit", check_choice(limit, "limit", LIMITS),
               "--per-second", repr(check_finite(per_second, "per_second"))]
        env = None if url is None else dict(os.environ, DATABASE_URL=url)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        self.pid = self.proc.pid
        self.backend_pid: int | None = None

    def wait_ready(self) -> Claimer:
        """Block until the process connected (its first line); RuntimeError if it exited."""
        hello = self._line()
        if not hello.startswith("ready "):
            self.proc.kill()
            raise RuntimeError(f"the claimer did not start: {hello!r}")
        fields = dict(part.split("=", 1) for part in hello.split()[1:])
        self.backend_pid = int(fields["backend"])
        return self

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait(30)
            raise RuntimeError(f"the claimer exited with status {code}")
        return line.strip()

    def claim(self, instant: datetime, ask: int) -> int:
        """Ask for `ask` jobs at database time `instant`; how many it claimed."""
        self.proc.stdin.write(f"claim {instant.isoformat()} {check_int(ask, 'ask', minimum=1)}\n")
        self.proc.stdin.flush()
        answer = self._line()
        if not answer.startswith("claimed "):
            raise RuntimeError(f"unexpected answer from the claimer: {answer!r}")
        return int(answer.removeprefix("claimed "))

    def close(self, timeout: float = 30.0) -> int:
        """Tell it to quit; its exit status."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            except BrokenPipeError:  # it has exited already
                pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout)


def starts_per_second(conn: psycopg.Connection, schema: str, *, limit: str,
                      per_second: float = 3.0, processes: int = 2, ask: int = 5,
                      seconds: int = 10, url: str | None = None) -> dict[str, Any]:
    """Jobs started per second, in all and per process, when `processes` claimer processes
    each ask for `ask` noop jobs every second of a manual clock, behind `limit` (see the
    module docstring); also the processes' pids and backend pids. `url`: the server of
    `conn`, when it is not DATABASE_URL's (or the embedded one)."""
    check_choice(limit, "limit", LIMITS)
    per_second = check_finite(per_second, "per_second")
    check_int(processes, "processes", minimum=1, maximum=16)
    check_int(ask, "ask", minimum=1)
    check_int(seconds, "seconds", minimum=1)
    clear(conn)
    clock = ManualClock()
    db.set_clock(conn, clock.datetime())
    plans.fill_pending(conn, processes * ask * seconds)  # due at the manual clock's start
    ratelimit.install(conn)
    if limit == "database":
        ratelimit.set_limit(conn, "noop", per_second=per_second, burst=per_second)
    db.set_clock(conn, None)
    claimers: list[Claimer] = []
    try:
        for _ in range(processes):  # started together, then waited for
            claimers.append(Claimer(schema, limit=limit, per_second=per_second, url=url))
        for claimer in claimers:
            claimer.wait_ready()
        started = [0] * processes
        for second in range(seconds):
            order = list(range(processes))
            if second % 2:
                order.reverse()  # who asks first alternates: neither always drains the bucket
            for i in order:
                started[i] += claimers[i].claim(clock.datetime(), ask)
            clock.advance(1)
    finally:
        codes = [c.close() for c in claimers]
    if any(codes):
        raise RuntimeError(f"a claimer exited with status {codes}")
    return {"per_second": sum(started) / seconds,
            "per_process": [count / seconds for count in started],
            "pids": [c.pid for c in claimers], "backend_pids": [c.backend_pid for c in claimers]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cachequeue.course.procs.ratelab")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--limit", choices=LIMITS, required=True)
    parser.add_argument("--per-second", type=float, default=3.0)
    args = parser.parse_args(argv)
    bucket = LocalBucket(args.per_second, args.per_second)
    with db.connect(args.schema) as conn:
        print(f"ready backend={conn.info.backend_pid}", flush=True)
        for line in sys.stdin:
            words = line.split()
            if words == ["quit"]:
                break
            instant, ask = datetime.fromisoformat(words[1]), int(words[2])
            db.set_clock(conn, instant)
            if args.limit == "database":
                claimed = len(ratelimit.claim_limited(conn, "noop", ask))
            else:
                want = ask if args.limit == "none" else bucket.take(instant.timestamp(), ask)
                claimed = len(jobs.claim_many(conn, want, kinds=["noop"])) if want else 0
            print(f"claimed {claimed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
