"""The peers under the same faults: procrastinate's and pgqueuer's own workers through SIGSTOP, SIGKILL and a PostgreSQL restart.

Usage: .venv/bin/python bench/verify_peers.py [--seed 21] [--jobs 12] [--workers 2]
       [--peers procrastinate,pgqueuer] [--faults pause,kill,restart] [--margin 10]
       [--observe 45] [--quick] [--out FILE]

Everything runs on a private throw-away server (`cachequeue.embedded.Server.private()`),
deleted afterwards: the nemesis restarts it. For every (fault kind, peer) a fresh schema gets
the peer's own tables (its schema installer), our side-effect table `verify_peer_effects`
(bench/verify_peers.sql, no unique key: a doubled effect shows as two rows) and `--jobs`
jobs submitted through the peer's own client, each with a seeded duration of 0.3-1.5 s.
Then `--workers` worker processes run, each the peer's own long-running worker with its
DEFAULT settings (importlib.metadata versions and the defaults are in the JSON):

  procrastinate   App.run_worker_async() -- concurrency 1, LISTEN/NOTIFY, heartbeat every
                  update_heartbeat_interval = 10 s, stalled_worker_timeout = 30 s; the task
                  has procrastinate's default retry (none)
  pgqueuer        QueueManager.run() -- batch_size 10, heartbeat_timeout 30 s (a picked
                  job whose heartbeat is older is picked again), heartbeats at half of it

The handler (the same for both) records its calls from inside the worker process into a
history file in verify's format (`cachequeue.verify.history.Recorder`): `invoke run` with the
peer's job id and pid when it starts, then it sleeps its duration, commits its side effect
(one INSERT on a connection of its own, autocommit), and records `ok run` (or `fail run`
with the error). A supervisor replaces every worker process that exits (as systemd's
Restart=always would); the nemesis, once some handler is running:

  pause     SIGSTOP the worker process running a job for the peer's window + `--margin`
            seconds (both windows are 30 s by default), then SIGCONT
  kill      SIGKILL the worker process running a job (the supervisor starts a new one)
  restart   an immediate PostgreSQL restart (`pg_ctl restart -m immediate`)

then the run goes on until every job is completed or `--observe` seconds have passed (more
than both 30 s windows, so a peer that re-runs stalled jobs has had its chance), and the
workers get SIGTERM. Read from outside after the run: the peer's tables (every row) and our
effects. Per peer and fault: jobs submitted, completed, lost (never completed), duplicates
(jobs whose handler was invoked more than once), doubled side effects, stuck jobs (left in
'doing' / 'picked' after the run), each anomaly with its witness (the few operations).

The history is expressed in verify's format (submit, nemesis events, effects from our
table) and the peers' tables as a snapshot whose jobs carry a `state` (done, failed, or the
peer's own status), so verify's `lost` and `side-effect` checks run on it unchanged; the
other checks need lease tokens and attempt rows the peers do not have, so they are not run,
and duplicates and stuck jobs are counted directly.

Prints one JSON document on stdout (and to --out), with the machine facts. `--quick`: a smoke run
(both peers, the kill fault only, 3 jobs, 3 s after the kill: shorter than either
peer's window, so it shows the mechanics, not what a peer does after its window).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import psycopg
from psycopg import sql

from cachequeue import sqlfile
from cachequeue.course.labs import perf
from cachequeue.embedded import Server
from cachequeue.verify import checks, history

HERE = Path(__file__).resolve().parent
SQL = sqlfile.parse((HERE / "verify_peers.sql").read_text(encoding="utf-8"),
                    "bench/verify_peers.sql")
PEERS = ("procrastinate", "pgqueuer")
FAULTS = ("pause", "kill", "restart")
# The peers' own defaults that decide what a fault does (read from their signatures at run
# time by `settings()`; these names say where).
WINDOW = {"procrastinate": "stalled_worker_timeout", "pgqueuer": "heartbeat_timeout"}
STUCK = {"procrastinate": ("doing",), "pgqueuer": ("picked",)}
WITNESSES = 2  # witnesses kept per anomaly kind and per check (every job is still listed)


def options(schema: str) -> str:
    return f"-c search_path={schema}"


def schema_of(peer: str, fault: str) -> str:
    return f"vp_{peer}_{fault}"


# ------------------------------------------------------------------ the peers' defaults


def _defaults(fn, names) -> dict:
    import inspect
    params = inspect.signature(fn).parameters
    out = {}
    for name in names:
        value = params[name].default
        out[name] = value.total_seconds() if hasattr(value, "total_seconds") else (
            value.value if hasattr(value, "value") else value)
    return out


def settings() -> dict:
    """Versions and the defaults in force (read from the installed code, not assumed)."""
    import procrastinate
    import procrastinate.worker
    from pgqueuer import QueueManager
    worker = _defaults(procrastinate.worker.Worker.__init__,
                       ["concurrency", "update_heartbeat_interval", "stalled_worker_timeout",
                        "fetch_job_polling_interval", "listen_notify",
                        "shutdown_graceful_timeout"])
    task = _defaults(procrastinate.App.task, ["retry"]) if "retry" in \
        __import__("inspect").signature(procrastinate.App.task).parameters else {}
    run = _defaults(QueueManager.run, ["batch_size", "heartbeat_timeout", "dequeue_timeout",
                                       "max_concurrent_tasks", "mode"])
    return {
        "procrastinate": {"version": importlib.metadata.version("procrastinate"),
                          "call": "App.run_worker_async() with no arguments",
                          "worker_defaults": worker, "task_defaults": task,
                          "stalled_jobs": "the worker never re-runs a stalled job by itself: "
                                          "JobManager.get_stalled_jobs() is for the user to "
                                          "call (e.g. in a periodic task); not called here"},
        "pgqueuer": {"version": importlib.metadata.version("pgqueuer"),
                     "call": "QueueManager.run() with no arguments",
                     "run_defaults": run},
        "psycopg": importlib.metadata.version("psycopg"),
    }


def window(peer: str, cfg: dict) -> float:
    d = cfg[peer]["worker_defaults" if peer == "procrastinate" else "run_defaults"]
    return float(d[WINDOW[peer]])


# ------------------------------------------------------------------ the worker (child process)


def _child(peer: str, url: str, schema: str, path: str, name: str) -> None:
    """One worker of `peer` with its defaults, until SIGTERM; its handler records its calls."""
    import logging
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    rec = history.Recorder(path, name)
    pid = os.getpid()

    async def handle(job_id: int, ms: int) -> None:
        call = rec.call()
        rec.op("invoke", "run", call=call, job=job_id, pid=pid)
        await asyncio.sleep(ms / 1000)
        try:
            async with await psycopg.AsyncConnection.connect(
                    url, autocommit=True, options=options(schema)) as conn:
                cur = await conn.execute(SQL["effect"].sql, {
                    "key": f"job-{job_id}", "job_id": job_id, "process": name, "pid": pid})
                at = (await cur.fetchone())[0]
        except Exception as exc:
            rec.op("fail", "run", call=call, job=job_id, pid=pid, error=repr(exc)[:200])
            raise
        rec.op("ok", "run", call=call, job=job_id, pid=pid, effect_at=at)

    if peer == "procrastinate":
        import procrastinate
        logging.getLogger("procrastinate").setLevel(logging.WARNING)
        app = procrastinate.App(connector=procrastinate.PsycopgConnector(
            conninfo=url, kwargs={"options": options(schema)}))

        @app.task(name="work", pass_context=True)
        async def work(context, ms):
            await handle(context.job.id, ms)

        async def main():
            async with app.open_async():
                await app.run_worker_async(name=name)

        asyncio.run(main())  # procrastinate installs its own SIGTERM handler
        return
    from pgqueuer import PsycopgDriver, Queries, QueueManager

    async def main():
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                     options=options(schema))
        qm = QueueManager(Queries(PsycopgDriver(conn)))

        @qm.entrypoint("work")
        async def work(job):
            await handle(job.id, int(job.payload.decode()))

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, qm.shutdown.set)
        try:
            await qm.run()
        finally:
            await conn.close()

    asyncio.run(main())


# ------------------------------------------------------------------ set-up and snapshots


def setup(url: str, peer: str, schema: str, durations: list[int]) -> list[int]:
    """A fresh schema with the peer's tables, our effect table, and the jobs; their ids."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    with psycopg.connect(url, autocommit=True, options=options(schema)) as conn:
        conn.execute(SQL["create_effects"].sql)
    if peer == "procrastinate":
        import logging

        import procrastinate
        logging.getLogger("procrastinate").setLevel(logging.ERROR)
        app = procrastinate.App(connector=procrastinate.PsycopgConnector(
            conninfo=url, kwargs={"options": options(schema)}))
        task = app.task(name="work", pass_context=True)(lambda context, ms: None)

        async def main():
            async with app.open_async():
                await app.schema_manager.apply_schema_async()
                return [await task.defer_async(ms=ms) for ms in durations]
    else:
        from pgqueuer import PsycopgDriver, Queries

        async def main():
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                         options=options(schema))
            try:
                q = Queries(PsycopgDriver(conn))
                await q.install()
                return list(await q.enqueue(["work"] * len(durations),
                                            [str(ms).encode() for ms in durations],
                                            [0] * len(durations)))
            finally:
                await conn.close()
    return [int(i) for i in asyncio.run(main())]


def tables(url: str, peer: str, schema: str) -> dict:
    names = (["procrastinate_jobs", "procrastinate_workers", "procrastinate_events"]
             if peer == "procrastinate" else ["pgqueuer_jobs", "pgqueuer_log"])
    out = {}
    with psycopg.connect(url, autocommit=True, options=options(schema)) as conn:
        for name in names:
            out[name] = [r[0] for r in conn.execute(SQL[name].sql).fetchall()]
        out["effects"] = [dict(zip(("key", "job_id", "process", "pid", "applied_at"), r,
                                   strict=True))
                          for r in conn.execute(SQL["effects"].sql).fetchall()]
    return out


def final_status(peer: str, snap: dict) -> dict[int, str]:
    """The peer's own last word on every job it knows."""
    if peer == "procrastinate":
        return {r["id"]: r["status"] for r in snap["procrastinate_jobs"]}
    status = {}
    for r in snap["pgqueuer_log"]:  # in created order: the last one stands
        status[r["job_id"]] = r["status"]
    for r in snap["pgqueuer_jobs"]:  # still in the queue table: not finished
        status[r["id"]] = r["status"]
    return status


DONE = {"succeeded", "successful"}
FAILED = {"failed", "exception"}


# ------------------------------------------------------------------ one run


class Fleet:
    """The worker processes of one peer, with a supervisor that replaces any that exits."""

    def __init__(self, peer, url, schema, path, folder, rec):
        self.peer, self.url, self.schema, self.path, self.folder = peer, url, schema, path, folder
        self.rec = rec
        self.procs: dict[str, subprocess.Popen] = {}
        self.count = 0
        self.exits: list[dict] = []
        self.lock = threading.Lock()

    def spawn(self) -> str:
        name = f"w{self.count}"
        self.count += 1
        log = open(self.folder / f"{self.peer}-{name}.log", "wb")  # noqa: SIM115
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", self.peer,
               "--child-url", self.url, "--child-schema", self.schema,
               "--child-history", str(self.path), "--child-name", name]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=log, env=dict(os.environ, PGAPPNAME=f"vp-{self.peer}-{name}"))
        p.log = log
        self.procs[name] = p
        self.rec.op("info", "spawn", worker=name, pid=p.pid)
        return name

    def supervise(self) -> None:
        with self.lock:
            for name, p in list(self.procs.items()):
                if p.poll() is not None:
                    del self.procs[name]
                    self.exits.append({"worker": name, "pid": p.pid, "code": p.returncode,
                                       "stderr_tail": _tail(self.folder / f"{self.peer}-{name}.log")})
                    self.rec.op("info", "exit", worker=name, pid=p.pid, code=p.returncode)
                    p.log.close()
                    self.spawn()

    def stop(self) -> list[int]:
        with self.lock:
            for p in self.procs.values():
                if p.poll() is None:
                    try:
                        p.send_signal(signal.SIGCONT)
                        p.send_signal(signal.SIGTERM)
                    except ProcessLookupError:
                        pass
            codes = []
            for p in self.procs.values():
                try:
                    codes.append(p.wait(timeout=20))
                except subprocess.TimeoutExpired:
                    p.kill()
                    codes.append(p.wait())
                p.log.close()
            return codes


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-600:]
    except OSError:
        return ""


def in_flight(path: Path, rec_name: str | None = None) -> list[dict]:
    """Handler calls invoked and not (yet) ended, by the history so far."""
    ops = history.read(path)
    ended = {op["call"] for op in ops if op["f"] == "run" and op["type"] != "invoke"}
    return [op for op in ops if op["f"] == "run" and op["type"] == "invoke"
            and op["call"] not in ended]


def run_one(server: Server, peer: str, fault: str, cfg: dict, args, folder: Path,
            lock: threading.Lock) -> dict:
    url = server.url
    schema = schema_of(peer, fault)
    rng = random.Random(f"{args.seed}-{peer}-{fault}")
    durations = [rng.randint(300, 1500) for _ in range(args.jobs)]
    path = folder / f"{peer}-{fault}.jsonl"
    path.unlink(missing_ok=True)
    rec = history.Recorder(path, "driver")
    nem = history.Recorder(path, "nemesis")
    ids = setup(url, peer, schema, durations)
    for job_id, ms in zip(ids, durations, strict=True):
        rec.op("ok", "submit", job=job_id, ms=ms, key=f"job-{job_id}")
    ms_of = dict(zip(ids, durations, strict=True))
    before = tables(url, peer, schema)
    fleet = Fleet(peer, url, schema, path, folder, rec)
    began = time.monotonic()
    target = None
    try:
        for _ in range(args.workers):
            fleet.spawn()
        # The fault comes once a handler has run for a while (its worker is mid-job).
        deadline = time.monotonic() + 60
        while True:
            fleet.supervise()
            # Mid-job: started more than 0.1 s ago, and more than 0.3 s of its duration left.
            now = time.time()
            running = [op for op in in_flight(path) if now - op["time"] > 0.1
                       and op["time"] + ms_of[op["job"]] / 1000 - now > 0.3]
            if running:
                target = running[0]
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{peer}/{fault}: no handler started within 60 s: "
                                   f"{fleet.exits or [_tail(folder / f'{peer}-w0.log')]}")
            time.sleep(0.05)
        hold = window(peer, cfg) + args.margin
        pid = target["pid"]
        if fault == "pause":
            os.kill(pid, signal.SIGSTOP)
            nem.op("info", "pause", pid=pid, worker=target["process"], job=target["job"],
                   hold=hold)
            end = time.monotonic() + hold
            while time.monotonic() < end:
                fleet.supervise()
                time.sleep(0.2)
            os.kill(pid, signal.SIGCONT)
            nem.op("info", "resume", pid=pid, worker=target["process"], job=target["job"])
        elif fault == "kill":
            os.kill(pid, signal.SIGKILL)
            nem.op("info", "kill", pid=pid, worker=target["process"], job=target["job"])
        else:
            with lock:
                started = time.time()
                server.restart("immediate")
                nem.op("info", "restart", started=started, until=time.time(),
                       during_job=target["job"], worker=target["process"])
        fault_end = time.monotonic()
        # Observe: until every job is completed by the peer's tables, or `observe` s.
        while time.monotonic() - fault_end < args.observe:
            fleet.supervise()
            try:
                status = final_status(peer, tables(url, peer, schema))
            except psycopg.OperationalError:
                status = {}
            if status and all(status.get(i) in DONE | FAILED for i in ids) \
                    and not in_flight(path):
                break
            time.sleep(0.5)
        fleet.supervise()
    finally:
        codes = fleet.stop()
    after = tables(url, peer, schema)
    ops = history.read(path)
    return analyse(peer, fault, ids, ops, before, after, fleet, codes, cfg,
                   round(time.monotonic() - began, 1), hold if fault == "pause" else None)


# ------------------------------------------------------------------ the analysis


def analyse(peer, fault, ids, ops, before, after, fleet, codes, cfg, seconds, hold) -> dict:
    status = final_status(peer, after)
    # verify's format: the effects our table holds (each row took effect), and a snapshot
    # whose jobs carry a state the checks know (done, failed, else the peer's own status).
    effects_ops = [{"process": e["process"], "type": "info", "f": "effect", "job": e["job_id"],
                    "key": e["key"], "applied": True, "pid": e["pid"], "time": e["applied_at"]}
                   for e in after["effects"]]
    vops = [op for op in ops if op["f"] != "run"] + effects_ops
    vops.sort(key=lambda op: op["time"])
    snap = {"jobs": [{"job_id": i, "state": ("done" if status.get(i) in DONE else
                                             "failed" if status.get(i) in FAILED else
                                             status.get(i, "missing")),
                      "peer_status": status.get(i), "payload": {"key": f"job-{i}"}}
                     for i in ids],
            "effects": [{"key": e["key"], "job_id": e["job_id"]} for e in after["effects"]],
            "results": [], "attempts": []}
    violations = checks.check(vops, snap, lease=0.0, poll=0.0, only=["lost", "side-effect"])
    runs = defaultdict(list)
    for op in ops:
        if op["f"] == "run":
            runs[op["job"]].append(op)
    invoked = Counter(op["job"] for op in ops if op["f"] == "run" and op["type"] == "invoke")
    effects = Counter(e["job_id"] for e in after["effects"])
    nemesis = [op for op in ops if op["process"] == "nemesis"]
    submits = {op["job"]: op for op in ops if op["f"] == "submit"}

    def witness(job_id):
        return [*sorted([submits[job_id], *nemesis, *runs[job_id][:6]],
                        key=lambda op: op["time"]),
                {"row": "peer", "job_id": job_id, "status": status.get(job_id),
                 "effects": effects.get(job_id, 0)}]

    completed = [i for i in ids if status.get(i) in DONE]
    failed = [i for i in ids if status.get(i) in FAILED]
    lost = [i for i in ids if status.get(i) not in DONE]
    stuck = [i for i in ids if status.get(i) in STUCK[peer]]
    dup = [i for i in ids if invoked[i] > 1]
    doubled = [i for i in ids if effects[i] > 1]
    # Every anomalous job by kind; the witness of the first WITNESSES of each kind.
    anomalies = []
    for kind, jobs_ in (("lost", lost), ("stuck", stuck), ("duplicate", dup),
                        ("doubled-effect", doubled)):
        for i in jobs_[:WITNESSES]:
            anomalies.append({"kind": kind, "job": i, "peer_status": status.get(i),
                              "handler_invocations": invoked[i], "effects": effects[i],
                              "witness": witness(i)})
    by_check = defaultdict(list)
    for v in violations:
        by_check[v.check].append(v)
    return {
        "peer": peer, "fault": fault, "seconds": seconds,
        "fault_detail": nemesis,
        "pause_hold_s": hold,
        "submitted": len(ids), "completed": len(completed), "failed": len(failed),
        "lost": len(lost), "duplicates": len(dup), "doubled_effects": len(doubled),
        "stuck": len(stuck),
        "final_status_counts": dict(Counter(str(status.get(i)) for i in ids)),
        "handler_invocations": sum(invoked.values()),
        "effects_committed": sum(effects.values()),
        "worker_exits": fleet.exits, "workers_spawned": fleet.count,
        "stop_exit_codes": codes,
        "jobs": {"lost": lost, "stuck": stuck, "duplicate": dup, "doubled_effect": doubled},
        "verify_checks": {"run": ["lost (1)", "side-effect (6)"],
                          "violations_per_check": {k: len(v) for k, v in by_check.items()},
                          "violations_jobs": {k: [x.job for x in v] for k, v in by_check.items()},
                          "violations": [x.as_dict() for v in by_check.values()
                                         for x in v[:WITNESSES]]},
        "anomalies": anomalies,
        "tables_before": before, "tables_after": after,
    }


def observed(r: dict, cfg: dict) -> str:
    """One sentence of what this run showed, from its own figures (nothing assumed)."""
    peer, n = r["peer"], r["submitted"]
    [ev] = [op for op in r["fault_detail"] if op["f"] in ("pause", "kill", "restart")]
    if ev["f"] == "pause":
        w = window(peer, cfg)
        what = (f"SIGSTOP of worker {ev['worker']} while it ran job {ev['job']}, held "
                f"{ev['hold']:g} s ({ev['hold'] - w:g} s past {peer}'s default "
                f"{WINDOW[peer]} of {w:g} s), then SIGCONT")
    elif ev["f"] == "kill":
        what = f"SIGKILL of worker {ev['worker']} while it ran job {ev['job']}"
    else:
        what = (f"immediate PostgreSQL restart ({ev['until'] - ev['started']:.2f} s) while "
                f"worker {ev['worker']} ran job {ev['during_job']}")
    exits = [e for e in r["worker_exits"] if e["code"] != -signal.SIGKILL]
    return (f"{peer} {cfg[peer]['version']}, defaults, {r['workers_spawned'] - len(r['worker_exits'])}"
            f" worker processes: after {what}, and {r['seconds']:g} s in all: "
            f"{r['completed']} of {n} jobs completed, {r['lost']} never completed "
            f"({r['stuck']} left {'/'.join(STUCK[peer])}), {r['duplicates']} had the handler "
            f"invoked more than once, {r['doubled_effects']} had their side effect committed "
            f"more than once; {r['handler_invocations']} handler calls, "
            f"{r['effects_committed']} effects"
            + (f"; {len(exits)} worker process(es) exited by themselves (status "
               f"{sorted({e['code'] for e in exits})}) and were replaced" if exits else "")
            + ".")


def _one(found, errors, server, peer, fault, cfg, args, folder, lock) -> None:
    try:
        found[peer] = run_one(server, peer, fault, cfg, args, folder, lock)
    except BaseException as exc:  # noqa: BLE001 -- re-raised by main
        errors.append(exc)


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--jobs", type=int, default=12, help="jobs per peer and fault")
    parser.add_argument("--workers", type=int, default=2, help="worker processes per peer")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--margin", type=float, default=10.0,
                        help="seconds a pause outlasts the peer's stalled/heartbeat window")
    parser.add_argument("--observe", type=float, default=45.0,
                        help="seconds after the fault to wait for the jobs to complete")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: the kill fault only, 3 jobs, 3 s observation (too "
                             "short for either peer's 30 s window: it shows the mechanics)")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--child", choices=PEERS, help=argparse.SUPPRESS)
    for name in ("url", "schema", "history", "name"):
        parser.add_argument(f"--child-{name}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.child_url, args.child_schema, args.child_history,
               args.child_name)
        return 0
    if args.quick:
        args.faults, args.jobs, args.observe = "kill", 3, 3.0
    peers = [p for p in args.peers.split(",") if p]
    faults = [f for f in args.faults.split(",") if f]
    if set(peers) - set(PEERS) or set(faults) - set(FAULTS) or args.jobs < 1 \
            or args.workers < 1:
        parser.error(f"peers among {PEERS}, faults among {FAULTS}, jobs and workers >= 1")
    cfg = settings()
    started = time.monotonic()
    results = []
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="cq-verify-peers-") as tmp, \
            Server.private() as server:
        folder = Path(tmp)
        for fault in faults:
            if fault == "restart" or len(peers) == 1:
                for peer in peers:
                    results.append(run_one(server, peer, fault, cfg, args, folder, lock))
                    print(json.dumps({k: results[-1][k] for k in (
                        "peer", "fault", "submitted", "completed", "lost", "duplicates",
                        "doubled_effects", "stuck")}), file=sys.stderr, flush=True)
                continue
            # pause and kill touch one worker process of one peer: the peers run side by
            # side (schemas of their own), so the long windows overlap.
            found: dict[str, dict] = {}
            errors: list[BaseException] = []
            threads = [threading.Thread(target=_one, args=(found, errors, server, p, fault, cfg,
                                                           args, folder, lock)) for p in peers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
            for peer in peers:
                results.append(found[peer])
                print(json.dumps({k: found[peer][k] for k in (
                    "peer", "fault", "submitted", "completed", "lost", "duplicates",
                    "doubled_effects", "stuck")}), file=sys.stderr, flush=True)
        with psycopg.connect(server.url) as conn:
            facts = perf.machine(conn, server.url)
    summary = {p: {f: {k: r[k] for k in ("submitted", "completed", "failed", "lost",
                                          "duplicates", "doubled_effects", "stuck")}
                   for r in results if r["peer"] == p for f in [r["fault"]]} for p in peers}
    out = {"benchmark": "verify_peers", "machine": facts,
           "parameters": {"seed": args.seed, "jobs": args.jobs, "workers": args.workers,
                          "peers": peers, "faults": faults, "margin_s": args.margin,
                          "observe_s": args.observe, "quick": args.quick,
                          "job_duration_ms": [300, 1500],
                          "supervisor": "every worker process that exits is replaced"},
           "versions_and_defaults": cfg,
           "summary": summary, "observed": [observed(r, cfg) for r in results],
           "runs": results,
           "seconds": round(time.monotonic() - started, 1)}
    perf.emit(out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
