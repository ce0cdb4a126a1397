"""Where one `cachequeue worker` process spends its time while it drains no-op jobs (py-spy).

Usage: .venv/bin/python bench/worker_profile.py [--system cachequeue_c10] [--jobs 3000]
       [--concurrency N] [--worker-args "--no-batch"] [--rate 250] [--blocking]
       [--label after] [--out FILE] [--raw FILE] [--note TEXT]

Submits `--jobs` no-op jobs into a fresh schema (as bench/worker_throughput.py does), starts
one `cachequeue worker` process configured as `--system` of bench/worker_throughput.py
(`cachequeue_c10`: the command's defaults, concurrency 10 and the completion batch;
`cachequeue_c1`: --concurrency 1; `cachequeue_c1_durable`: --concurrency 1 --no-batch),
attaches `py-spy record --format raw --idle --threads` to it (sampling every thread, waiting
ones too; `--nonblocking` unless `--blocking`: a blocking sample stops the whole process,
and at 250 samples a second that slowed a drain tenfold), and stops both once the queue is
drained. Each sample of the worker's main thread inside Worker.run (the loop: every database
call is made there) is put in the first category, from the innermost frame outwards, whose
function it is in:

  wait        select() in Worker._sleep: the loop has nothing to do
  claim       jobs.claim_many / the fair claim
  complete    the reports: finish, finish_many, fail (single_pass.record, InFlight.flush)
  beat        registry.beat (heartbeats)
  start       starting a handler (Thread.start, the pool's hand-over)
  log         the logging module and log_line
  other       the rest of the loop (bookkeeping; reading the notifications that arrived,
              Worker._hear, since the loop's own connection LISTENs)

Handler threads are counted apart (`handler_samples`, and `handler_share`: idle = waiting
for a job, handler = the handler itself, hand-over = the rest: taking the job, handing the
result back). The worker's own counters from its `stopped` line give the statements it
sent per job (`per_job`). Prints one JSON document: the share of the loop's samples per
category, the jobs/s of this run (start-up included, and slowed by the sampling), and the
raw counts. With `--out FILE` the document is stored in FILE under `--label`, beside what
FILE already holds. data/bench/worker_profile.json keeps:
- "before" and "after": concurrency 1 with the completion batch, before and after issue 20's
  notification and batching changes, sampled blocking ("before" was recorded with
  PYTHONPATH=<a checkout of that code>/lib, so this script, the schema and the worker all
  were that code);
- "c10_before"/"c10_after" (the default worker) and "c1_durable_before"/"c1_durable_after"
  (--concurrency 1 --no-batch), sampled nonblocking, before and after the claim's one-time
  filter, the LISTEN on the loop's own connection and the log records without a caller
  look-up; each before ran with PYTHONPATH=<a checkout of main at b7fa8cf>/lib (the worker
  and the schema were that code, this script the new one), right before its after.
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
from cachequeue.queue import logline

# (category, function names that put a sample in it); the innermost match wins.
CATEGORIES = [
    ("wait", {"_sleep"}),
    ("claim", {"claim_many", "claim_fair"}),
    ("complete", {"record", "finish", "finish_many", "fail", "flush", "_flush", "report"}),
    ("beat", {"beat", "_beat"}),
    ("start", {"start", "_start_thread", "submit"}),
    ("log", {"_log", "log_line", "info", "emit", "handle", "callHandlers"}),
]
SYSTEMS = [s for s, spec in wt.SYSTEMS.items() if spec[0] == "cachequeue" and not spec[3]]


def categorise(stack: list[str]) -> str:
    """The category of one sample of the loop thread, `stack` outermost frame first."""
    names = [frame.split(" (")[0].rsplit(".", 1)[-1] for frame in stack]  # InFlight.start -> start
    for name in reversed(names):
        for category, functions in CATEGORIES:
            if name in functions:
                return category
    return "other"


def handler_part(stack: list[str], handler: str = "noop") -> str:
    """What a handler thread was doing: running the handler, idle (waiting in the pool for
    a job: SimpleQueue.get is C code, so the pool's own frame is innermost), or the rest."""
    names = [frame.split(" (")[0].rsplit(".", 1)[-1] for frame in stack]
    if handler in names:
        return "handler"
    if not names or names[-1] == "_serve":
        return "idle"
    return "hand-over"


def read_raw(path: Path) -> tuple[collections.Counter, collections.Counter]:
    """Loop-thread samples per category, and handler-thread samples per part."""
    loop: collections.Counter = collections.Counter()
    handlers: collections.Counter = collections.Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        stack_text, _, count = line.rpartition(" ")
        frames = stack_text.split(";")
        thread, stack = frames[0], frames[1:]
        if "MainThread" in thread and any(f.startswith("Worker.run ") for f in stack):
            loop[categorise(stack)] += int(count)  # the loop (not the start-up before it)
        elif "cachequeue-handler" in thread:
            handlers[handler_part(stack)] += int(count)
    return loop, handlers


def shares(counts: collections.Counter) -> dict[str, float]:
    total = sum(counts.values())
    return {k: round(v / total, 3) for k, v in counts.most_common()} if total else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=SYSTEMS, default="cachequeue_c10",
                        help="the worker's configuration, as in bench/worker_throughput.py")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=None,
                        help="instead of the system's")
    parser.add_argument("--worker-args", default="", help="more `cachequeue worker` options")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--blocking", action="store_true",
                        help="stop the worker for each sample (py-spy's default)")
    parser.add_argument("--label", default="after", help="the key of this run in --out")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--raw", type=Path, help="also keep py-spy's raw stacks here")
    parser.add_argument("--note", help="a remark on the machine, recorded with its facts "
                                       "(e.g. shared with other jobs)")
    args = parser.parse_args(argv)
    url = db.database_url(start=True)
    qt._check_local(url)
    _, setting, options, _ = wt.SYSTEMS[args.system]
    concurrency = setting if args.concurrency is None else args.concurrency
    worker_args = [*options, *shlex.split(args.worker_args)]
    wt.setup(url, args.system, args.jobs)
    facts = wt.machine(url, args.note)  # before the run: the load it starts under
    name = "bench-profile"
    with tempfile.TemporaryDirectory(prefix="cq-profile-") as tmp:
        raw = Path(tmp) / "profile.txt"
        cmd = [sys.executable, "-m", "cachequeue", "worker", "--schema", wt.schema_of(args.system),
               "--handlers", "cachequeue.course.labs.perf:NOOP_HANDLERS",
               "--concurrency", str(concurrency), "--name", name, *worker_args]
        log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed below, after its last read
        worker = subprocess.Popen(cmd, env=dict(os.environ, PGAPPNAME=name),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=log)
        spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record",
                                "--pid", str(worker.pid), "--format", "raw", "--idle",
                                "--threads", "--rate", str(args.rate), "--output", str(raw),
                                *([] if args.blocking else ["--nonblocking"])],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.monotonic()
        try:
            with db.connect(wt.schema_of(args.system)) as conn:
                while True:
                    remaining, _ = conn.execute(qt.CHECKS["cq"]).fetchone()
                    if not remaining:
                        break
                    if worker.poll() is not None or time.monotonic() - started > 600:
                        raise RuntimeError("the worker exited or did not drain in 600 s")
                    time.sleep(0.05)
                took = time.monotonic() - started
        finally:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            log.seek(0)
            lines = [x for x in map(logline.parse, log.read().decode(errors="replace")
                                    .splitlines()) if x is not None]
            log.close()
        loop, handlers = read_raw(raw)
        if args.raw is not None:
            args.raw.write_text(raw.read_text(encoding="utf-8"), encoding="utf-8")
    out = {"system": args.system, "jobs": args.jobs, "concurrency": concurrency,
           "worker_args": shlex.join(worker_args), "sampling": "blocking" if args.blocking
           else "nonblocking", "jobs_per_second": round(args.jobs / took, 1),
           "loop_share": shares(loop), "handler_share": shares(handlers),
           "loop_samples": dict(loop), "handler_samples": sum(handlers.values())}
    stopped = [x for x in lines if x["event"] == "stopped"]
    if stopped:
        counts = stopped[-1]
        out["per_job"] = {k: round(counts.get(k, 0) / args.jobs, 3)
                          for k in ("statements", "batches", "listener_statements")}
    facts["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    out["machine"] = facts
    print(json.dumps(out, indent=2))
    if args.out is not None:
        doc = (json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists()
               else {"benchmark": "worker_profile", "runs": {}})
        doc["runs"][args.label] = out
        args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
