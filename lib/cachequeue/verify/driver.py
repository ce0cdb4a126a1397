"""A verify run: N real worker processes on a private server, a seeded workload, a nemesis.

    result = driver.run(variant="real", seed=7, jobs=60, workers=4,
                        faults=("kill", "pause", "restart", "cut"))

What `run` does, bounded in jobs and in seconds:
1. starts a private throw-away server (`embedded.Server.private()`), installs the queue
   and the side-effect store in schema `verify`, and puts the fault proxy (`proxy.Proxy`)
   in front of it: workers reach the queue only through the proxy;
2. runs the prober (`verify.prober`, one recorded process with the variant's functions)
   to its end: its own jobs walk through the situation of every check, on every seed;
3. starts `workers` processes of `verify.workerproc` (the real `queue.Worker`, recorded;
   a mutant's functions if `variant` names one; each with its clock a seeded few leases
   off the database's) and submits `jobs` jobs (seeded: how long each works, whether its
   first attempt fails);
4. runs the nemesis, a seeded plan of faults of the kinds in `faults`, each recorded:
   `kill` (SIGKILL a worker; a new one takes its place), `pause` (SIGSTOP past the lease,
   then SIGCONT), `terminate` (SIGTERM: a graceful stop; a new worker takes its place),
   `restart` (an immediate restart of PostgreSQL), `cut` (the ambiguous commit: the proxy
   cuts a connection after a finish committed and before its reply arrived), `blackhole`
   (a partition between every worker and the server, longer than the lease, then the
   connections are cut), `delay` (every packet waits a while);
5. drains: once the nemesis and the submissions are over, waits until every job is
   settled, `time_limit` passed or no worker is left alive; stops the workers (each
   process's end is recorded as an `exit` operation: one that died of an error is a
   violation), takes the snapshot and checks the history (`checks.check`).

The result is a plain dict: the settings, the figures (operations, faults by kind, jobs by
state, seconds), `violations` (each with `check` and `witness`), `fired` (their checks),
`verdict` ("pass", "violations" or "inconclusive": cut short with jobs unsettled, listed
in `inconclusive` with `cut_short`, the cause) and `opportunities` (per check, the
situations it judged; `without_opportunity` names those with none).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import db, sqlfile
from ..checks import check_bool, check_int, check_seconds
from ..embedded import Server
from ..queue import jobs as queue_jobs
from ..queue import registry, schema
from ..queue.notify import CONNECTION_ERRORS
from . import checks, history, variants
from .proxy import Proxy
from .workerproc import KIND

__all__ = ["FAULTS", "SCHEMA", "Settings", "run"]

FAULTS = ("kill", "pause", "terminate", "restart", "cut", "blackhole", "delay")
SCHEMA = "verify"
_QUERIES = sqlfile.load(__package__, "driver.sql")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Violation|Exit)\w*(:|$)")
FINISH_MARKER = b"job_results"  # in the text of every finish statement, real or mutant


class Settings:
    """The workers' settings of a run (the checks need lease, poll and the policy)."""

    lease = 1.0
    poll = 0.5
    concurrency = 2
    batch_wait = 0.25
    policy = {"max_attempts": 3, "base": 0.2, "cap": 1.0, "jitter": "equal"}
    max_attempts = 3
    slack = 1.0  # seconds the reclaim check allows on top of lease + poll


def _install(conn) -> None:
    schema.install(conn)
    registry.install(conn)
    conn.execute(_QUERIES["install"].sql)


class _Fleet:
    """The worker processes: start, replace, signal, stop, and how each one ended."""

    def __init__(self, cfg: dict, workdir: Path, rec: history.Recorder) -> None:
        self.cfg, self.workdir, self.rec = cfg, workdir, rec
        self.procs: dict[str, subprocess.Popen] = {}
        self.paused: set[str] = set()
        self.dead: set[str] = set()  # signalled to die: not a victim any more
        self.stopping = False  # stop_all has begun: a SIGTERM of ours, not a crash
        self.forced: set[str] = set()  # killed by stop_all after its timeout
        self.reaped: set[str] = set()
        self.started = 0
        self._lock = threading.Lock()
        # Each worker's clock is off the database's by a seeded few leases (only the
        # worker-clock mutant reads a worker's clock; the real queue never does).
        self._skews = random.Random(cfg["seed"] * 7919)

    def spawn(self, name: str | None = None, **extra: Any) -> str:
        with self._lock:
            self.started += 1
            name = name or f"w{self.started}"
        skew = extra.pop("clock_skew", None)
        if skew is None:
            skew = round(self._skews.uniform(-3.0, 3.0) * self.cfg["lease"], 3)
        cfg = dict(self.cfg, name=name, seed=self.cfg["seed"] * 1000 + self.started,
                   clock_skew=skew, **extra)
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([sys.executable, "-m", "cachequeue.verify.workerproc",
                                 json.dumps(cfg)], stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        with self._lock:
            self.procs[name] = proc
        return name

    def live(self) -> list[str]:
        with self._lock:
            return [n for n, p in self.procs.items()
                    if p.poll() is None and n not in self.paused and n not in self.dead]

    def signal(self, name: str, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.procs[name].send_signal(sig)

    def alive(self) -> list[str]:
        """Processes not yet ended (paused ones included)."""
        with self._lock:
            return [n for n, p in self.procs.items() if p.poll() is None]

    def last_line(self, name: str) -> str:
        """The last line of a process's log (a traceback's last line names the error)."""
        try:
            text = (self.workdir / f"{name}.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        # A traceback's exception line (module.Error: message), with the line after it
        # (psycopg's DETAIL), else the last line.
        for n in range(len(lines) - 1, -1, -1):
            if _EXCEPTION_LINE.match(lines[n]):
                detail = lines[n + 1] if n + 1 < len(lines) else ""
                short = detail.startswith("DETAIL:") and len(detail) <= 120
                return (lines[n] + (" " + detail if short else ""))[:500]
        return lines[-1][:500] if lines else ""

    def reap(self) -> list[str]:
        """Record an `exit` operation for every process that ended since the last call:
        `cause` is `nemesis` (killed or terminated by the nemesis), `stopped` (the run's
        own stop), `forced` (the run's stop had to kill it) or `error` (it died by itself:
        a violation, check 10). The names of the processes that died of an error."""
        errors = []
        with self._lock:
            procs = dict(self.procs)
        for name, proc in procs.items():
            status = proc.poll()
            if status is None or name in self.reaped:
                continue
            self.reaped.add(name)
            if name in self.dead:
                cause = "nemesis"
            elif name in self.forced:
                cause = "forced"
            elif status == 0 or (self.stopping and status == -signal.SIGTERM):
                cause = "stopped"
            else:
                cause = "error"
                errors.append(name)
            self.rec.op("info", "exit", target=name, pid=proc.pid, status=status, cause=cause,
                        line=self.last_line(name) if cause == "error" else None)
        return errors

    def stop_all(self, timeout: float = 10.0) -> None:
        self.reap()  # what ended before the stop ended by itself
        self.stopping = True
        with self._lock:
            procs = dict(self.procs)
        for proc in procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, proc in procs.items():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.forced.add(name)
                proc.kill()
                proc.wait()
        self.reap()


def _plan(rng: random.Random, faults: Iterable[str], window: float, per_kind: int,
          lease: float) -> list[tuple[float, str, float]]:
    """(at, kind, duration) of each fault, in time order: `per_kind` of each kind, spread
    over [0.5, window] seconds after the start."""
    plan = []
    for kind in faults:
        for _ in range(per_kind):
            duration = {"pause": rng.uniform(1.1, 1.6) * lease,
                        "blackhole": rng.uniform(1.3, 1.8) * lease,
                        "delay": rng.uniform(0.5, 1.0) * lease}.get(kind, 0.0)
            plan.append((rng.uniform(0.5, window), kind, duration))
    return sorted(plan)


class _Nemesis:
    def __init__(self, fleet: _Fleet, server: Server, proxy: Proxy, rec: history.Recorder,
                 rng: random.Random, lease: float) -> None:
        self.fleet, self.server, self.proxy, self.rec, self.rng = fleet, server, proxy, rec, rng
        self.lease = lease
        self.quiet_at = 0.0  # monotonic: when the last pause or blackhole is over
        self.done = Counter()
        self.timers: list[threading.Thread] = []

    def _victim(self, work_left: float = 0.0,
                patience: float = 1.5) -> tuple[str | None, float | None]:
        """A live worker, preferring one that holds a job with more than `work_left`
        seconds of work left (a fault on an idle worker shows nothing; a pause shows most
        when the handler still runs after it): wait up to `patience` seconds for one, then
        take any holder, then any worker. With it, the seconds until the first of its leases
        runs out (None if it holds none)."""
        give_up = time.monotonic() + patience
        while True:
            live = sorted(self.fleet.live())
            holders: dict[str, tuple[float, float]] = {}
            with contextlib.suppress(Exception), db.connect(SCHEMA, url=self.server.url) as conn:
                holders = {name: (left, expires) for name, left, expires
                           in conn.execute(_QUERIES["holders"].sql).fetchall()}
            aimed = [n for n in live if n in holders and holders[n][0] > work_left]
            if not aimed and time.monotonic() >= give_up:
                aimed = [n for n in live if n in holders] or live
            if aimed:
                victim = self.rng.choice(aimed)
                return victim, holders[victim][1] if victim in holders else None
            if not live and time.monotonic() >= give_up:
                return None, None
            time.sleep(0.05)

    def act(self, kind: str, duration: float) -> None:
        if kind in ("pause", "blackhole"):
            # One at a time, and the workers back on their connections in between: a pause
            # inside a blackhole shows nothing (the frozen worker's statements could not
            # have arrived anyway), and a worker resumed into one cannot renew or report.
            time.sleep(max(0.0, self.quiet_at + 0.5 * self.lease - time.monotonic()))
        if kind in ("kill", "pause", "terminate"):
            victim, expires_in = self._victim(duration + 0.2 if kind == "pause" else 0.0)
            if victim is None:
                return
            if kind == "pause" and expires_in is not None:
                # Resumed just after its first lease ran out: past it, and most often before
                # another worker's poll took its job over, so that a late renewal or report
                # meets an expired lease that nobody holds yet (what heartbeat-after-expiry
                # needs to be caught) as well as one taken over.
                duration = max(0.0, expires_in) + self.rng.uniform(0.01, 0.05) * self.lease
            pid = self.fleet.procs[victim].pid
            if kind != "pause":
                self.fleet.dead.add(victim)
            if kind == "kill":
                self.fleet.signal(victim, signal.SIGKILL)
                self.rec.op("info", "kill", target=victim, pid=pid)
                self.rec.op("info", "spawn", target=self.fleet.spawn())
            elif kind == "terminate":
                self.fleet.signal(victim, signal.SIGTERM)
                self.rec.op("info", "terminate", target=victim, pid=pid)
                self.rec.op("info", "spawn", target=self.fleet.spawn())
            else:
                self.fleet.paused.add(victim)
                self.fleet.signal(victim, signal.SIGSTOP)
                self.rec.op("info", "pause", target=victim, pid=pid, until=time.time() + duration)
                self.quiet_at = time.monotonic() + duration
                self._later(duration, self._resume, victim)
        elif kind == "restart":
            started = time.time()
            self.server.restart("immediate")
            self.rec.op("info", "restart", started=started, until=time.time())
        elif kind == "cut":
            self.proxy.cut_after_commit(FINISH_MARKER, for_=3.0)
            self.rec.op("info", "cut-armed", marker=FINISH_MARKER.decode())
        elif kind == "blackhole":
            self.proxy.blackhole(duration)
            self.rec.op("info", "blackhole", until=time.time() + duration)
            self.quiet_at = time.monotonic() + duration
        elif kind == "delay":
            self.proxy.delay(0.1, duration)
            self.rec.op("info", "delay", seconds=0.1, until=time.time() + duration)
        self.done[kind] += 1

    def _resume(self, victim: str) -> None:
        self.fleet.signal(victim, signal.SIGCONT)
        self.fleet.paused.discard(victim)
        self.rec.op("info", "resume", target=victim)

    def _later(self, delay: float, fn, *args) -> None:
        def wait_then() -> None:
            time.sleep(delay)
            fn(*args)
        thread = threading.Thread(target=wait_then, daemon=True)
        thread.start()
        self.timers.append(thread)

    def run(self, plan: list[tuple[float, str, float]], start: float) -> None:
        for at, kind, duration in plan:
            time.sleep(max(0.0, start + at - time.monotonic()))
            self.act(kind, duration)
        for thread in self.timers:
            thread.join()


class _Submitter:
    """Submits the workload on its own direct connection; a submit cut by a restart is sent
    again under the same idempotency key, so it is recorded once, with its one job id."""

    def __init__(self, url: str, rec: history.Recorder, max_attempts: int) -> None:
        self.url, self.rec, self.max_attempts = url, rec, max_attempts
        self.conn = None

    def _one(self, payload: dict) -> None:
        for _ in range(200):
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = db.connect(SCHEMA, url=self.url)
                job_id = queue_jobs.submit(self.conn, tenant_id=payload.get("tenant", 1),
                                           kind=KIND, payload=payload,
                                           idempotency_key=payload["key"],
                                           max_attempts=self.max_attempts)
            except CONNECTION_ERRORS:  # the server restarting: try again shortly, same key
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                time.sleep(0.05)
                continue
            self.rec.op("ok", "submit", job=job_id, key=payload["key"])
            return
        raise RuntimeError(f"could not submit {payload['key']}")

    def submit(self, payloads: list[dict]) -> None:
        for payload in payloads:
            self._one(payload)

    def spread(self, payloads: list[dict], seconds: float) -> None:
        start = time.monotonic()
        for n, payload in enumerate(payloads):
            time.sleep(max(0.0, start + seconds * n / max(1, len(payloads)) - time.monotonic()))
            self._one(payload)
        if self.conn is not None:
            self.conn.close()


def _wait_for_claims(path: Path, workers: int, deadline: float) -> None:
    """Wait until every first worker has started and some job was claimed (a fault on a
    fleet still importing its modules shows nothing), or until `deadline`."""
    while time.monotonic() < deadline:
        ops = history.read(path)
        started = sum(op["f"] == "started" and op["process"] != "probe" for op in ops)
        if started >= workers and any(op["f"] == "claim" and op.get("token") for op in ops):
            return
        time.sleep(0.1)


def run(*, variant: str = variants.REAL, seed: int = 1, jobs: int = 60, workers: int = 4,
        faults: Iterable[str] = FAULTS, per_kind: int = 2, time_limit: float = 60.0,
        fault_window: float | None = None, workdir: str | os.PathLike | None = None,
        keep: bool = False, server: Server | None = None, tenants: int = 1,
        tenant_cap: int | None = None, probe: bool = True) -> dict[str, Any]:
    """Run one seeded verify run and check it; the result (see the module docstring).

    `per_kind` faults of each kind land within the first `fault_window` seconds after the
    workers are up (default: 0.8 s per fault); the run
    ends when every job is settled or `time_limit` seconds passed. The history and the
    workers' logs go to `workdir` (a temporary folder, deleted unless `keep`), with the
    timeline of the run (`timeline.png`, the first violation's witness in red). `server` is
    a private server of the caller's (`embedded.Server.private()`) to run on instead of a
    fresh one (several runs in a row; schema `verify` is rebuilt each time); never a
    server that holds anything else, since the nemesis restarts it. The jobs belong to
    `tenants` tenants in turn; `tenant_cap` makes the workers claim fairly with that cap per
    tenant (`Worker(fair=True, tenant_cap=...)`) and the checker check it (check 8).
    `probe` runs the prober (`verify.prober`) before the fleet: every check then has its
    situation on every seed.

    After the nemesis and the submissions end, the workers drain: the run waits until every
    job settled, the time limit passed, or no worker is left alive. A run that ended with
    jobs unsettled is cut short: those jobs are `inconclusive` (with `cut_short`, the
    cause), not lost, and the `verdict` is "inconclusive" unless a violation was found.
    """
    from ..checks import check_choice

    check_choice(variant, "variant", variants.VARIANTS)
    check_int(seed, "seed")
    check_int(jobs, "jobs", minimum=1, maximum=100_000)
    check_int(workers, "workers", minimum=1, maximum=32)
    check_int(per_kind, "per_kind", minimum=0, maximum=100)
    check_int(tenants, "tenants", minimum=1, maximum=1000)
    if tenant_cap is not None:
        check_int(tenant_cap, "tenant_cap", minimum=1, maximum=1000)
    check_seconds(time_limit, "time_limit")
    check_bool(probe, "probe")
    faults = tuple(faults)
    for kind in faults:
        check_choice(kind, "fault", FAULTS)
    own_dir = workdir is None
    folder = Path(tempfile.mkdtemp(prefix="cq-verify-")) if own_dir else Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "history.jsonl"
    path.unlink(missing_ok=True)
    rng = random.Random(seed)
    began = time.monotonic()
    s = Settings
    with contextlib.nullcontext(server) if server is not None else Server.private() as server:
        with db.connect(url=server.url) as conn:
            db.reset_schema(conn, SCHEMA, _install)
        rec = history.Recorder(path, "driver")
        proxy = Proxy(Path(server.socket_dir) / ".s.PGSQL.5432",
                      on_event=lambda name, **f: rec.op("info", name, **f))
        cfg = {"history": str(path), "variant": variant, "schema": SCHEMA, "url": server.url,
               "proxy_url": f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres",
               "lease": s.lease, "poll": s.poll, "concurrency": s.concurrency,
               "batch_wait": s.batch_wait, "policy": s.policy, "seed": seed,
               "tenant_cap": tenant_cap}
        rec.op("info", "run", variant=variant, seed=seed, jobs=jobs, workers=workers,
               faults=list(faults), lease=s.lease, poll=s.poll)
        fleet = _Fleet(cfg, folder, rec)
        nemesis = _Nemesis(fleet, server, proxy, rec, random.Random(seed + 1), s.lease)
        cut_short = None
        try:
            if probe:
                _probe(fleet, began + time_limit / 2)
            for _ in range(workers):
                fleet.spawn()
            # Most jobs are short; with pauses or partitions on, one in four outlives them
            # (its lease lives on renewals), so that a holder comes back to a running handler.
            long_share = 0.25 if {"pause", "blackhole"} & set(faults) else 0.0
            payloads = [{"key": f"key-{seed}-{i}", "tenant": 1 + i % tenants,
                         "work": round(rng.uniform(2.0, 3.0) if rng.random() < long_share
                                       else rng.uniform(0.1, 0.6), 3),
                         "fails": 1 if rng.random() < 0.15 else 0} for i in range(jobs)]
            first = max(1, jobs // 4)
            submitter = _Submitter(server.url, rec, s.max_attempts)
            submitter.submit(payloads[:first])
            _wait_for_claims(path, workers, began + time_limit / 2)
            if fault_window is None:
                fault_window = 0.5 + 0.8 * per_kind * len(faults)
            plan = _plan(rng, faults, fault_window, per_kind, s.lease)
            start = time.monotonic()
            thread = threading.Thread(target=nemesis.run, args=(plan, start), daemon=True)
            thread.start()
            # The rest arrive at a steady rate over the fault window: faults meet busy workers.
            feeder = threading.Thread(target=submitter.spread,
                                      args=(payloads[first:], 0.9 * fault_window), daemon=True)
            feeder.start()
            deadline = began + time_limit
            unsettled = jobs
            draining = False
            while time.monotonic() < deadline:
                time.sleep(0.25)
                fleet.reap()
                if thread.is_alive() or feeder.is_alive():
                    continue
                if not draining:
                    # The recovery and drain phase: the nemesis has stopped; the workers
                    # may settle what is left until the time limit, and only then is
                    # anything unsettled judged (as inconclusive, never as lost).
                    draining = True
                    rec.op("info", "drain", seconds_left=round(deadline - time.monotonic(), 3))
                with contextlib.suppress(Exception), db.connect(SCHEMA, url=server.url) as conn:
                    unsettled = conn.execute(_QUERIES["unsettled"].sql).fetchone()[0]
                if unsettled == 0:
                    break
                if not fleet.alive():
                    cut_short = f"no worker process was left alive, {unsettled} jobs unsettled"
                    break
            else:
                with contextlib.suppress(Exception), db.connect(SCHEMA, url=server.url) as conn:
                    unsettled = conn.execute(_QUERIES["unsettled"].sql).fetchone()[0]
                if unsettled:
                    cut_short = (f"the time limit of {time_limit:g} s passed with {unsettled} "
                                 "jobs unsettled")
            thread.join(timeout=max(0.0, deadline - time.monotonic()) + 10)
            rec.op("info", "drained", unsettled=unsettled, cut_short=cut_short)
        finally:
            fleet.stop_all()
            proxy.close()
        with db.connect(SCHEMA, url=server.url) as conn:
            snap = history.snapshot(conn)
        rec.close()
    (folder / "snapshot.json").write_text(json.dumps(snap, default=str), encoding="utf-8")
    ops = history.read(path)
    found = checks.check(ops, snap, lease=s.lease, poll=s.poll,
                         policy=instrument_policy(s.policy), slack=s.slack,
                         concurrency=s.concurrency, tenant_cap=tenant_cap, cut_short=cut_short)
    inconclusive = checks.unsettled(snap, cut_short) if cut_short else []
    chances = checks.opportunities(ops, snap, lease=s.lease, tenant_cap=tenant_cap)
    counts = Counter(op["f"] for op in ops if op["type"] == "info")
    lost_answers = checks.unknowns(ops, snap)
    result = {
        "variant": variant, "seed": seed, "jobs": jobs, "workers": workers,
        "faults": list(faults),
        "settings": {"lease": s.lease, "poll": s.poll, "concurrency": s.concurrency,
                     "batch_wait": s.batch_wait, "policy": s.policy, "tenants": tenants,
                     "tenant_cap": tenant_cap},
        "operations": len(ops),
        "faults_injected": {k: counts[k] for k in ("kill", "pause", "terminate", "restart",
                                                   "blackhole", "delay")}
        | {"cut": counts["cut"], "cut_armed": counts["cut-armed"]},
        "worker_processes": fleet.started,
        "states": dict(Counter(j["state"] for j in snap["jobs"])),
        "attempts": len(snap["attempts"]),
        # Reports whose answer was lost with the connection: how many the tables show took
        # effect, and what the worker concluded about those (never "rejected").
        "unknown_reports": {
            "total": len(lost_answers),
            "took_effect": sum(u["accepted"] for u in lost_answers),
            "verdicts_of_those": dict(Counter(str(u["verdict"]) for u in lost_answers
                                              if u["accepted"]))},
        "unsettled_at_end": unsettled,
        "seconds": round(time.monotonic() - began, 2),
        "verdict": "violations" if found else "inconclusive" if inconclusive else "pass",
        "violations": [v.as_dict() for v in found],
        "fired": sorted({v.check for v in found}),
        # Cut short: the jobs left unsettled and why (never counted as lost).
        "cut_short": cut_short,
        "inconclusive": inconclusive,
        # Per check, the situations it judged; a check with none could not have fired.
        "opportunities": chances,
        "without_opportunity": sorted(n for n, c in chances.items() if c["count"] == 0),
    }
    if keep or not own_dir:
        result["history"] = str(path)
        from . import timeline  # matplotlib: only for a run that is kept

        fig = timeline.figure(ops, snap, found[0] if found else None)
        fig.savefig(folder / "timeline.png", dpi=110)
        result["timeline"] = str(folder / "timeline.png")
        timeline.save_html(ops, snap, found[0] if found else None, folder / "timeline.html")
    if own_dir and not keep:
        import shutil
        shutil.rmtree(folder, ignore_errors=True)
    return result


def _probe(fleet: _Fleet, deadline: float) -> None:
    """Run the prober (`verify.prober`) before the fleet starts and wait for it to end (its
    exit is recorded like any worker's: one that dies of an error is a violation)."""
    name = fleet.spawn("probe", role="prober", clock_skew=3600.0)
    proc = fleet.procs[name]
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(max(1.0, deadline - time.monotonic()))
    if proc.poll() is None:
        fleet.dead.add(name)  # out of time: ended by the run, not by itself
        proc.kill()
        proc.wait()
    fleet.reap()


def instrument_policy(policy: dict):
    from ..queue.retry import RetryPolicy
    return RetryPolicy(**policy)
