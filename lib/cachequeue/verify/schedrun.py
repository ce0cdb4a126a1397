"""The schedules' fault run (`cachequeue verify-schedules`): several scheduler processes on a private server, one SIGKILLed
after it planned, one SIGSTOPped after it planned and resumed past a fire time, the
server restarted, and a stretch where all are down; then `verify.schedules.check`.

    result = schedrun.run(schedulers=3, steps=36, seed=1)
    result["figures"]   # fire times expected / enqueued / duplicated / missed, faults

Time is the database clock, frozen per session and stepped by the driver (five minutes a
step, starting 23:00 UTC on 24 October 2026, so the run crosses Berlin's fall-back night):
each step every live scheduler is told "plan <instant>", and once all have planned,
"enqueue <instant>": they race on the same fire times. The faults are keyed to those
events, never to sleeps: the victim's "planned" reply is what the kill and the stop wait
for; the restart waits for a step whose passes enqueued something. Each scheduler is a
real Python process (`python -m cachequeue.verify.schedrun`) using
`queue.schedules` over its own connection; after the restart it connects again and
repeats the command (safe: the unique key makes a repeated enqueue do nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import db, embedded, queue
from ..checks import check_choice, check_instance, check_int
from ..queue import schedules
from ..queue.notify import CONNECTION_ERRORS
from . import schedules as vschedules

__all__ = ["SCHEDULES", "START", "STEP", "child", "run"]

START = datetime(2026, 10, 24, 23, 0, tzinfo=UTC)  # 01:00 in Berlin, the night clocks go back
STEP = timedelta(minutes=5)
SCHEMA = "schedchaos"
KIND = "report"
# name, cron, zone, catch_up
SCHEDULES = (("every-5", "*/5 * * * *", "UTC", 0),
             ("quarter-berlin", "*/15 * * * *", "Europe/Berlin", 2),
             ("nightly-berlin", "30 2 * * *", "Europe/Berlin", 0))
REPLY_WAIT = 60.0  # seconds a scheduler may take to answer one command


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen
    planned: datetime | None = None
    lines: list[str] = field(default_factory=list)

    def send(self, line: str) -> None:
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def reply(self, wait: float = REPLY_WAIT) -> dict[str, Any]:
        sel = selectors.DefaultSelector()
        sel.register(self.popen.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(wait):
                raise TimeoutError(f"scheduler {self.name} did not answer in {wait:g} s")
        finally:
            sel.close()
        line = self.popen.stdout.readline()
        if not line:
            raise RuntimeError(f"scheduler {self.name} exited ({self.popen.poll()})")
        self.lines.append(line)
        return json.loads(line)


def _spawn(url: str, name: str, variant: str) -> _Proc:
    popen = subprocess.Popen(
        [sys.executable, "-m", "cachequeue.verify.schedrun", "--url", url,
         "--schema", SCHEMA, "--name", name, "--variant", variant],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        bufsize=1)
    proc = _Proc(name, popen)
    if proc.reply()["event"] != "ready":
        raise RuntimeError(f"scheduler {name} did not start")
    return proc


def run(*, schedulers: int = 3, steps: int = 36, seed: int = 0, outage: tuple[int, int] = (20, 26),
        variant: str = "real", time_limit: float = 180.0) -> dict[str, Any]:
    """The fault run; a dict with the plan, the passes, the violations and the figures."""
    schedulers = check_int(schedulers, "schedulers", minimum=2, maximum=8)
    steps = check_int(steps, "steps", minimum=12, maximum=500)
    rng = random.Random(check_int(seed, "seed"))
    check_choice(variant, "variant", vschedules.SCHEDULE_VARIANTS)
    check_instance(outage, "outage", tuple)
    if not (len(outage) == 2
            and 2 <= check_int(outage[0], "outage[0]") < check_int(outage[1], "outage[1]") < steps):
        raise ValueError(f"outage must be (first, end) steps with 2 <= first < end < steps, "
                         f"got {outage!r}")
    # The faults: the steps they hit, drawn from the seed, apart from the outage.
    free = [i for i in range(2, steps - 3) if not (outage[0] - 2 <= i <= outage[1] + 1)]
    if len(free) < 3:
        raise ValueError(f"{steps} steps leave no room for a kill, a stop and a restart "
                         f"apart from the outage {outage!r}; give more steps")
    kill_at, stop_at, restart_at = sorted(rng.sample(free, 3))
    deadline = time.monotonic() + time_limit
    passes: list[vschedules.Pass] = []
    carried = {"kills": 0, "stops": 0, "restarts": 0, "outage_steps": 0}
    procs: list[_Proc] = []
    stopped: _Proc | None = None
    spawned = 0
    with embedded.Server.private() as server:
        url = server.url
        with db.connect(url=url) as conn:
            db.reset_schema(conn, SCHEMA, queue.install,
                            lambda c: vschedules.install(c, variant))
            conn.execute("INSERT INTO job_kinds (kind, description) VALUES (%s, %s) "
                         "ON CONFLICT DO NOTHING", (KIND, "a scheduled report"))
            db.set_clock(conn, START.isoformat())
            for name, cron, zone, catch_up in SCHEDULES:
                schedules.create(conn, name, cron, timezone=zone, kind=KIND,
                                 payload={"report": name}, catch_up=catch_up)
        try:
            for _ in range(schedulers):
                spawned += 1
                procs.append(_spawn(url, f"s{spawned}", variant))
            for i in range(1, steps + 1):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the run took longer than {time_limit:g} s")
                now = START + i * STEP
                if outage[0] <= i < outage[1]:  # every scheduler is down: nobody passes
                    carried["outage_steps"] += 1
                    continue
                if stopped is not None and i == stop_at + 2:  # resume past a fire time
                    stopped.popen.send_signal(signal.SIGCONT)
                    stopped.send(f"enqueue {now.isoformat()}")
                    r = stopped.reply()
                    passes.append(vschedules.Pass(stopped.name, stopped.planned, now))
                    carried["stale_enqueued"] = len(r["fired"])
                    procs.append(stopped)
                    stopped = None
                for p in procs:
                    p.send(f"plan {now.isoformat()}")
                for p in procs:
                    p.reply()
                    p.planned = now
                if i == kill_at:  # killed after it planned: its pass never enqueues
                    victim = procs.pop(0)
                    victim.popen.kill()
                    victim.popen.wait(30)
                    carried["kills"] += 1
                    spawned += 1
                    procs.append(_spawn(url, f"s{spawned}", variant))
                    procs[-1].send(f"plan {now.isoformat()}")
                    procs[-1].reply()
                    procs[-1].planned = now
                if i == stop_at:  # stopped after it planned, resumed two steps later
                    stopped = procs.pop(0)
                    stopped.popen.send_signal(signal.SIGSTOP)
                    carried["stops"] += 1
                for p in procs:  # all at once: they race on the same fire times
                    p.send(f"enqueue {now.isoformat()}")
                enqueued = 0
                for p in procs:
                    r = p.reply()
                    enqueued += len(r["fired"])
                    passes.append(vschedules.Pass(p.name, p.planned, now))
                if i >= restart_at and not carried["restarts"] and enqueued:
                    server.restart()  # every session is cut off; the data stays
                    carried["restarts"] += 1
            with db.connect(SCHEMA, url=url) as conn:
                snap = vschedules.snapshot(conn)
        finally:
            for p in procs + ([stopped] if stopped else []):
                if p.popen.poll() is None:
                    p.popen.send_signal(signal.SIGCONT)
                    p.popen.kill()
                    p.popen.wait(30)
    violations = vschedules.check(snap, passes)
    end = START + steps * STEP
    expected = {(s["id"], t) for s in snap["schedules"]
                for t in schedules.fire_times(s["cron"], s["timezone"], s["starts_at"], end,
                                              limit=100_000)}
    keys = [(f["schedule_id"], f["fire_at"]) for f in snap["fires"]]
    figures = {"fire_times_expected": len(expected), "enqueued": len(keys),
               "distinct_enqueued": len(set(keys)),
               "duplicated": len(keys) - len(set(keys)),
               "skipped_by_policy": len(expected - set(keys)),
               "missed_beyond_policy": sum(v.check == "schedule-missed" for v in violations),
               "beyond_policy": sum(v.check == "schedule-beyond-policy" for v in violations),
               "jobs": len(snap["jobs"]), "passes": len(passes),
               "scheduler_processes": spawned} | carried
    return {"variant": variant, "seed": seed,
            "plan": {"kill_at": kill_at, "stop_at": stop_at, "restart_at": restart_at,
                     "outage": list(outage)},
            "figures": figures, "violations": [v.as_dict() for v in violations],
            "snapshot": snap}


# ------------------------------------------------------------------ the child process


def _connect(url: str, name: str) -> Any:
    for _ in range(300):  # the server may be restarting: up to 30 s
        try:
            return db.connect(SCHEMA, url=url)
        except CONNECTION_ERRORS:
            time.sleep(0.1)
    return db.connect(SCHEMA, url=url)


def child(url: str, name: str, variant: str) -> int:
    """One scheduler: answers "plan T" and "enqueue T" on stdin with one JSON line each."""
    vschedules.use(variant)
    conn = _connect(url, name)
    planned: schedules.Plan | None = None
    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        verb, _, instant = line.strip().partition(" ")
        for attempt in (1, 2):
            try:
                db.set_clock(conn, instant)
                if verb == "plan":
                    planned = schedules.plan(conn)
                    out = {"event": "planned", "candidates": len(planned.candidates)}
                else:
                    fired = schedules.enqueue(conn, planned, scheduler=name)
                    out = {"event": "enqueued", "fired": [[f.name, f.fire_at.isoformat()]
                                                          for f in fired]}
                break
            except CONNECTION_ERRORS:
                if attempt == 2:
                    raise
                conn.close()
                conn = _connect(url, name)
        print(json.dumps(out), flush=True)
    return 0


def _main() -> int:
    parser = argparse.ArgumentParser(description="one scheduler of schedrun.run")
    parser.add_argument("--url", required=True)
    parser.add_argument("--schema", default=SCHEMA)
    parser.add_argument("--name", required=True)
    parser.add_argument("--variant", default="real", choices=vschedules.SCHEDULE_VARIANTS)
    args = parser.parse_args()
    return child(args.url, args.name, args.variant)


if __name__ == "__main__":
    sys.exit(_main())
