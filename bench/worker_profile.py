"""Where one `cachequeue worker` process spends its time while it drains no-op jobs (py-spy).

Usage: .venv/bin/python bench/worker_profile.py [--jobs 3000] [--concurrency 1]
       [--worker-args "--no-batch"] [--rate 250] [--label after] [--out FILE] [--raw FILE]

Submits `--jobs` no-op jobs into a fresh schema (as bench/worker_throughput.py does), starts
one `cachequeue worker` process, attaches `py-spy record --format raw --idle --threads` to it
(sampling every thread, waiting ones too), and stops both once the queue is drained. Each
sample of the worker's main thread inside Worker.run (the loop: every database call is made
there) is put in the first category, from the innermost frame outwards, whose function it
is in:

  wait        select() in Worker._sleep: the loop has nothing to do
  claim       jobs.claim_many / the fair claim
  complete    the reports: finish, finish_many, fail (single_pass.record, InFlight.flush)
  beat        registry.beat (heartbeats)
  start       starting a handler (Thread.start, the pool's hand-over)
  log         the logging module and log_line
  other       the rest of the loop (bookkeeping)

Handler threads are counted apart (`handler_samples`). Prints one JSON document: the
share of the loop's samples per category, the jobs/s of this run (start-up included), and
the raw counts. With `--out FILE` the document is stored in FILE under `--label`, beside
what FILE already holds: data/bench/worker_profile.json keeps "before" (recorded with
PYTHONPATH=<a checkout of the code before issue 20>/lib, so this script, the schema and
the worker all were that code) and "after" (this code), with the machine facts.
Needs py-spy (`pip install py-spy`; ptrace rights: root, or kernel.yama.ptrace_scope=0).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import queue_throughput as qt  # bench/ is on sys.path when this script runs
import worker_throughput as wt

from cachequeue import db

# (category, function names that put a sample in it); the innermost match wins.
CATEGORIES = [
    ("wait", {"_sleep"}),
    ("claim", {"claim_many", "claim_fair"}),
    ("complete", {"record", "finish", "finish_many", "fail", "flush", "_flush", "report"}),
    ("beat", {"beat", "_beat"}),
    ("start", {"start", "_start_thread", "submit"}),
    ("log", {"_log", "log_line", "info", "emit", "handle", "callHandlers"}),
]


def categorise(stack: list[str]) -> str:
    """The category of one sample of the loop thread, `stack` outermost frame first."""
    names = [frame.split(" (")[0].rsplit(".", 1)[-1] for frame in stack]  # InFlight.start -> start
    for name in reversed(names):
        for category, functions in CATEGORIES:
            if name in functions:
                return category
    return "other"


def read_raw(path: Path) -> tuple[collections.Counter, int]:
    """Loop-thread samples per category, and the handler threads' sample count."""
    loop: collections.Counter = collections.Counter()
    handlers = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        stack_text, _, count = line.rpartition(" ")
        frames = stack_text.split(";")
        thread, stack = frames[0], frames[1:]
        if "MainThread" in thread and any(f.startswith("Worker.run ") for f in stack):
            loop[categorise(stack)] += int(count)  # the loop (not the start-up before it)
        elif "cachequeue-handler" in thread:
            handlers += int(count)
    return loop, handlers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--worker-args", default="", help="more `cachequeue worker` options")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--label", default="after", help="the key of this run in --out")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--raw", type=Path, help="also keep py-spy's raw stacks here")
    args = parser.parse_args(argv)
    url = db.database_url()
    qt._check_local(url)
    system = "cachequeue_c1"
    wt.setup(url, system, args.jobs)
    name = "bench-profile"
    with tempfile.TemporaryDirectory(prefix="cq-profile-") as tmp:
        raw = Path(tmp) / "profile.txt"
        cmd = [sys.executable, "-m", "cachequeue", "worker", "--schema", wt.schema_of(system),
               "--handlers", "cachequeue.course.labs.perf:NOOP_HANDLERS",
               "--concurrency", str(args.concurrency), "--name", name,
               *shlex.split(args.worker_args)]
        log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by wt.stop()
        worker = subprocess.Popen(cmd, env=dict(os.environ, PGAPPNAME=name),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=log)
        worker.log = log
        spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(worker.pid), "--format", "raw",
                                "--idle", "--threads", "--rate", str(args.rate),
                                "--output", str(raw)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.monotonic()
        with db.connect(wt.schema_of(system)) as conn:
            while True:
                remaining, _ = conn.execute(qt.CHECKS["cq"]).fetchone()
                if not remaining:
                    break
                if worker.poll() is not None or time.monotonic() - started > 600:
                    raise RuntimeError("the worker exited or did not drain in 600 s")
                time.sleep(0.05)
            took = time.monotonic() - started
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
        wt.stop([worker])
        loop, handlers = read_raw(raw)
        if args.raw is not None:
            args.raw.write_text(raw.read_text(encoding="utf-8"), encoding="utf-8")
    total = sum(loop.values())
    out = {"jobs": args.jobs, "concurrency": args.concurrency, "worker_args": args.worker_args,
           "jobs_per_second": round(args.jobs / took, 1),
           "loop_share": {k: round(v / total, 3) for k, v in loop.most_common()},
           "loop_samples": dict(loop), "handler_samples": handlers, "machine": wt.machine(url)}
    print(json.dumps(out, indent=2))
    if args.out is not None:
        doc = (json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists()
               else {"benchmark": "worker_profile", "runs": {}})
        doc["runs"][args.label] = out
        args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
