"""The same no-op and slow jobs on three queues: the PostgreSQL queue, Redis Streams consumer groups, NATS JetStream.

Usage: .venv/bin/python bench/broker_throughput.py [--jobs 2000] [--slow-jobs 60] [--reps 3]
       [--processes 1,2,4] [--samples 50] [--idle 4,24]
       [--systems postgres,redis_streams,jetstream,jetstream_bare] [--out FILE] [--note TEXT]

Systems (each worker a process of its own, one job at a time):

  postgres       `cachequeue worker --concurrency 1` (its defaults: one claim statement per
                 job, results in the fenced completion batch), bench/worker_throughput.py's
                 drain, latency and idle measurements, reused as they are
  redis_streams  a consumer-group loop on a private embedded redis-server (this script,
                 --child): XREADGROUP COUNT 1 BLOCK 1000, the handler, XACK; nothing written
                 elsewhere (no result store, no lease, no retry: the bare broker)
  jetstream      `cachequeue worker --broker nats --concurrency 1` on a private nats-server
                 (JetStream, file store, R1): fetch 1, a fenced result row in PostgreSQL
                 (register the delivery, record the result: two statements), ack_sync
  jetstream_bare the same stream and consumer read by a bare loop (this script, --child):
                 fetch 1, the handler, ack_sync; nothing written elsewhere, like
                 redis_streams: what the broker costs without the fenced result

Two workloads, the same handler in every system's consumer (course.labs.perf):

  noop           the no-op handler, `--jobs` jobs per drain: what the transport itself costs
  slow           the slow handler (perf.SLOW_S = 0.05 s of time.sleep, standing for I/O-bound
                 work such as a call to a model), `--slow-jobs` jobs per drain (0: none). One
                 consumer runs one job at a time, so N consumers finish at most N / SLOW_S
                 jobs/s, whatever the transport: `ceiling_jobs_per_second` in the output

Throughput: for every (repetition, process count, workload, system), the jobs are submitted
first (not timed), then N worker processes start and are released together: the PostgreSQL
queue's gate is a lock on its job table (worker_throughput.drain), JetStream's a lock on the
fence's delivery table (every worker's first fenced write waits for it), Redis's a BLPOP
on a gate key every consumer blocks on, the bare JetStream loop's a line on its stdin. The run ends at the last completion: the database
clock for the two PostgreSQL-backed systems (max finished_at), the consumers' own clock for
the bare ones (the last XACK or ack). Medians over interleaved repetitions (each repetition
runs both workloads, the system order rotating); rates in jobs/s.

Latency: one idle worker per system, `--samples` jobs one at a time (each after the previous
one started, plus a random pause up to 0.2 s): handler start (time.time() in the worker)
minus the moment before the submit call (time.time() here); p50, p99, max. Measured with the
no-op handler only: it ends where a handler starts, so the handler cannot change it.

Idle cost: what an idle worker makes its servers do per second, from counters read around a
worker idle for T1 and for T2 seconds ((c(T2) - c(T1)) / (T2 - T1): start-up and shutdown
cancel out): PostgreSQL transactions (pg_stat_database; for the two systems that use it),
Redis commands (total_commands_processed), NATS messages in + out (the server's /varz). An
idle worker runs no handler, so this too is the same for both workloads.

One JSON document on stdout (and in --out): the no-op medians in `median_jobs_per_second`,
the slow ones in `slow`, every drain in `runs` (with its `workload`). Loopback and Unix sockets only: the embedded (or
a local DATABASE_URL) PostgreSQL, private Redis and NATS servers made and removed here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nats.errors
import psycopg
import queue_throughput as qt  # bench/ is on sys.path when this script runs
import worker_throughput as wt
from psycopg import sql

from cachequeue import db, embedded_nats, embedded_redis, sqlfile
from cachequeue.broker import Publisher, fence
from cachequeue.course.labs import perf

SYSTEMS = {
    # name: what one worker process does per job (the JSON's "systems"; each is its default)
    "postgres": "cachequeue worker --concurrency 1: claim, run, fenced completion batch",
    "redis_streams": "XREADGROUP COUNT 1, run, XACK (no result store, no lease)",
    "jetstream": "cachequeue worker --broker nats --concurrency 1: fetch 1, run, two fenced "
                 "PostgreSQL statements, ack_sync",
    "jetstream_bare": "a pull consumer loop: fetch 1, run, ack_sync (no result store: the "
                      "broker alone)",
}
PG_SYSTEM = "cachequeue_c1"  # worker_throughput's name for the PostgreSQL queue's defaults
JS_SCHEMA = "bench_js"
STREAM, GROUP, GATE = "cq:bench_broker:jobs", "workers", "cq:bench_broker:gate"
WORKLOADS = {
    # name: the handlers (MODULE:ATTR) every system's consumer runs the `noop` jobs with
    "noop": "cachequeue.course.labs.perf:NOOP_HANDLERS",
    "slow": "cachequeue.course.labs.perf:SLOW_HANDLERS",
}
HERE = Path(__file__).resolve().parent
HERE_SQL = sqlfile.parse((HERE / "broker_throughput.sql").read_text(encoding="utf-8"),
                         "bench/broker_throughput.sql")


def handler(workload: str):
    """The handler of the `noop` jobs in `workload` (the one `cachequeue worker` gets too)."""
    module, attr = WORKLOADS[workload].split(":")
    if module != perf.__name__:
        raise ValueError(f"workload {workload!r}: handlers outside {perf.__name__}")
    return getattr(perf, attr)["noop"]


# ------------------------------------------------------------------ Redis Streams (the consumer process)


def redis_child(url: str, name: str, gated: bool, workload: str = "noop") -> None:
    """One consumer of the group until SIGTERM; prints {"acked", "last_ack"} when it stops."""
    run = handler(workload)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    client = embedded_redis.client(url, timeout=30)
    client.client_setname(name)  # the parent waits for every name: then SIGTERM is handled
    if gated:
        client.blpop([GATE], timeout=120)
    acked, last = 0, None
    try:
        while not stopping:
            reply = client.xreadgroup(GROUP, name, {STREAM: ">"}, count=1, block=1000)
            for _, entries in reply or ():
                for entry_id, fields in entries:
                    run(json.loads(fields["payload"]))
                    client.xack(STREAM, GROUP, entry_id)
                    acked, last = acked + 1, time.time()
    finally:  # what it did, even when it ends with an error (its traceback on stderr)
        print(json.dumps({"acked": acked, "last_ack": last}), flush=True)


def redis_reset(client, n: int, stamp: str | None = None) -> None:
    client.delete(STREAM, GATE)
    client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    pipe = client.pipeline(transaction=False)
    for i in range(n):
        pipe.xadd(STREAM, {"payload": json.dumps({"n": i})})
    pipe.execute()


def _child(flag: str, url: str, name: str, gated: bool, stdin: int,
           workload: str) -> subprocess.Popen:
    """This script again as a consumer process (`flag`: --child-redis or --child-bare)."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by wt.stop()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), flag, url,
                             "--name", name, "--workload", workload,
                             *(["--gated"] if gated else [])],
                            stdin=stdin, stdout=subprocess.PIPE, stderr=log, text=True)
    proc.log = log
    return proc


def redis_worker(url: str, name: str, gated: bool = False,
                 workload: str = "noop") -> subprocess.Popen:
    return _child("--child-redis", url, name, gated, subprocess.DEVNULL, workload)


def redis_drain(url: str, processes: int, n: int, timeout: float,
                workload: str = "noop") -> dict:
    client = embedded_redis.client(url, timeout=30)
    redis_reset(client, n)
    names = [f"bench-redis-{k}" for k in range(processes)]
    procs = [redis_worker(url, name, gated=True, workload=workload) for name in names]
    try:
        deadline = time.monotonic() + 120
        # Every consumer connected and named (the set of names also holds this client's own
        # unnamed connection: a strict-subset test of it against `names` ended at once).
        while not set(names) <= {c.get("name") for c in client.client_list()}:
            if (error := wt._failed(procs)) is not None:
                raise RuntimeError(f"redis_streams: a consumer exited early:\n{error}")
            if time.monotonic() > deadline:
                raise RuntimeError("redis_streams: consumers not at the gate after 120 s")
            time.sleep(0.01)
        time.sleep(0.1)  # each has sent its BLPOP (CLIENT SETNAME came just before it)
        start_at = time.time()
        client.rpush(GATE, *["go"] * processes)

        def drained() -> bool:
            (group,) = client.xinfo_groups(STREAM)
            last_id = client.xinfo_stream(STREAM)["last-generated-id"]
            return group["pending"] == 0 and group["last-delivered-id"] == last_id

        _until("redis_streams", procs, drained, timeout)
    except BaseException:
        wt.stop(procs)
        raise
    finally:
        client.close()
    return _stopped("redis_streams", procs, processes, n, start_at)


# ------------------------------------------------------------------ JetStream, bare (the consumer process)

BARE_SCHEMA = "bench_jsbare"


def js_bare_child(url: str, name: str, gated: bool, workload: str = "noop") -> None:
    """A bare pull consumer until SIGTERM: fetch 1, the handler, ack_sync; waits for a line
    on stdin first when `gated`; prints "ready", then {"acked", "last_ack"} when it stops."""
    from cachequeue.broker import streams

    run = handler(workload)

    async def main() -> None:
        where = streams.names(BARE_SCHEMA)
        nc = await embedded_nats.connect(url, name=name)
        sub = await nc.jetstream().pull_subscribe_bind(where.consumer, stream=where.stream)
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stopping.set)
        print("ready", flush=True)
        if gated:
            await loop.run_in_executor(None, sys.stdin.readline)
        acked, last = 0, None
        while not stopping.is_set():
            try:
                msgs = await sub.fetch(batch=1, timeout=1)
            except nats.errors.TimeoutError:
                continue
            for msg in msgs:
                run(json.loads(msg.data))
                await msg.ack_sync()
                acked, last = acked + 1, time.time()
        await nc.close()
        print(json.dumps({"acked": acked, "last_ack": last}), flush=True)

    asyncio.run(main())


def bare_worker(url: str, name: str, gated: bool = False,
                workload: str = "noop") -> subprocess.Popen:
    proc = _child("--child-bare", url, name, gated, subprocess.PIPE, workload)
    if proc.stdout.readline().strip() != "ready":
        proc.wait(30)
        error = wt._failed([proc])
        wt.stop([proc])
        raise RuntimeError(f"{name}: the bare consumer did not start:\n{error}")
    return proc


def bare_reset(nats: str, n: int) -> None:
    with Publisher(BARE_SCHEMA, url=nats) as pub:
        pub.delete_stream()
    with Publisher(BARE_SCHEMA, url=nats) as pub:
        for i in range(n):
            pub.submit("noop", {"n": i})


def bare_drain(nats: str, processes: int, n: int, timeout: float,
               workload: str = "noop") -> dict:
    bare_reset(nats, n)
    procs = []
    try:
        procs += [bare_worker(nats, f"bench-jsbare-{k}", gated=True, workload=workload)
                  for k in range(processes)]
        start_at = time.time()
        for p in procs:  # the gate: every consumer waits for one line
            p.stdin.write("go\n")
            p.stdin.flush()
        with Publisher(BARE_SCHEMA, url=nats) as pub:  # work-queue retention: acked = gone
            _until("jetstream_bare", procs, lambda: not pub.stream_state()["messages"], timeout)
    except BaseException:
        wt.stop(procs)
        raise
    return _stopped("jetstream_bare", procs, processes, n, start_at)


def _until(system: str, procs: list, drained, timeout: float) -> None:
    """Poll `drained()` every 5 ms until true; RuntimeError if a consumer exits or after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not drained():
        if (error := wt._failed(procs)) is not None:
            raise RuntimeError(f"{system}: a consumer exited early:\n{error}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{system}: not drained after {timeout} s")
        time.sleep(0.005)


def _stopped(system: str, procs: list, processes: int, n: int, start_at: float) -> dict:
    """SIGTERM the bare consumers, read what each acknowledged and when it last did."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    said = []
    for p in procs:
        lines = p.communicate(timeout=30)[0].strip().splitlines()
        if not lines:
            error = wt._failed([p])
            wt.stop(procs)
            raise RuntimeError(f"{system}: a consumer said nothing:\n{error}")
        said.append(json.loads(lines[-1]))
    codes = wt.stop(procs)
    acked = sum(s.get("acked", 0) for s in said)
    if acked != n:
        raise RuntimeError(f"{system}: {acked} acknowledged of {n}")
    seconds = max(s["last_ack"] for s in said if s.get("last_ack")) - start_at
    return {"system": system, "processes": processes, "jobs": n,
            "seconds": round(seconds, 4), "rate": round(n / seconds, 1), "exit_codes": codes}


# ------------------------------------------------------------------ JetStream (cachequeue worker --broker nats)


def js_worker(nats: str, name: str, workload: str = "noop") -> subprocess.Popen:
    env = dict(os.environ, PGAPPNAME=name, NATS_URL=nats)
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by wt.stop()
    proc = subprocess.Popen([sys.executable, "-m", "cachequeue", "worker", "--broker", "nats",
                             "--schema", JS_SCHEMA, "--handlers", WORKLOADS[workload],
                             "--concurrency", "1",
                             "--name", name], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=log)
    proc.log = log
    return proc


def js_reset(url: str, nats: str, n: int) -> None:
    """A fresh schema with the fence's tables and a fresh stream holding n no-op jobs."""
    with psycopg.connect(url, autocommit=True) as conn:
        db.drop_schema(conn, JS_SCHEMA)
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(JS_SCHEMA)))
    with db.connect(JS_SCHEMA) as conn:
        fence.install(conn)
    with Publisher(JS_SCHEMA, url=nats) as pub:
        pub.delete_stream()
    with Publisher(JS_SCHEMA, url=nats) as pub:
        for i in range(n):
            pub.submit("noop", {"n": i})


def js_drain(url: str, nats: str, processes: int, n: int, timeout: float,
             workload: str = "noop") -> dict:
    js_reset(url, nats, n)
    names = [f"bench-js-{k}" for k in range(processes)]
    with psycopg.connect(url, autocommit=True) as gate, db.connect(JS_SCHEMA) as watch:
        gate.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(JS_SCHEMA)))
        gate.execute("BEGIN")
        gate.execute(HERE_SQL["gate"].sql)
        procs = [js_worker(nats, name, workload) for name in names]
        try:
            deadline = time.monotonic() + 120
            while perf.waiting_on(watch, names) != set(names):
                if (error := wt._failed(procs)) is not None:
                    raise RuntimeError(f"jetstream: a worker exited early:\n{error}")
                if time.monotonic() > deadline:
                    raise RuntimeError("jetstream: workers not waiting at the gate after 120 s")
                time.sleep(0.05)
            start_at = gate.execute(qt.HERE["clock"].sql).fetchone()[0]
            gate.execute("COMMIT")
            deadline = time.monotonic() + timeout
            while True:
                done, end_at = watch.execute(HERE_SQL["check"].sql).fetchone()
                if done == n:
                    break
                if (error := wt._failed(procs)) is not None:
                    raise RuntimeError(f"jetstream: a worker exited early:\n{error}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"jetstream: {done} of {n} results after {timeout} s")
                time.sleep(0.1)
        finally:
            codes = wt.stop(procs)
    seconds = (end_at - start_at).total_seconds()
    return {"system": "jetstream", "processes": processes, "jobs": n,
            "seconds": round(seconds, 4), "rate": round(n / seconds, 1), "exit_codes": codes}


# ------------------------------------------------------------------ latency and idle cost


def sampled(samples: int, seed: int, submit, started, failed) -> dict:
    """Submit `samples` jobs one at a time (submit(n)); started() -> {n: start time}."""
    rng, sent = random.Random(seed), {}
    for n in range(-1, samples):  # n = -1: a warm-up job, proves the worker is up
        time.sleep(rng.uniform(0, 0.2))
        sent[n] = time.time()
        submit(n)
        deadline = time.monotonic() + (60 if n < 0 else 10)
        while n not in started():
            if (error := failed()) is not None:
                raise RuntimeError(f"the worker exited:\n{error}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {n} did not start")
            time.sleep(0.002)
    stamps = started()
    return {"samples": samples, **perf.summary([stamps[n] - sent[n] for n in range(samples)])}


def latency(system: str, url: str, redis_url: str, nats: str, samples: int, seed: int) -> dict:
    if system == "postgres":
        return wt.latency(url, PG_SYSTEM, samples, seed)
    with tempfile.TemporaryDirectory(prefix="cq-bench-") as tmp:
        stamp = os.path.join(tmp, "stamps")
        if system == "redis_streams":
            client = embedded_redis.client(redis_url, timeout=30)
            redis_reset(client, 0)
            proc = redis_worker(redis_url, "bench-redis-latency")

            def submit(n):
                client.xadd(STREAM, {"payload": json.dumps({"n": n, "stamp": stamp})})
            try:
                return sampled(samples, seed, submit, lambda: perf.read_stamps(stamp),
                               lambda: wt._failed([proc]))
            finally:
                wt.stop([proc])
                client.close()
        if system == "jetstream_bare":
            bare_reset(nats, 0)
            proc, schema = bare_worker(nats, "bench-jsbare-latency"), BARE_SCHEMA
        else:
            js_reset(url, nats, 0)
            proc, schema = js_worker(nats, "bench-js-latency"), JS_SCHEMA
        with Publisher(schema, url=nats) as pub:
            try:
                return sampled(samples, seed,
                               lambda n: pub.submit("noop", {"n": n, "stamp": stamp}),
                               lambda: perf.read_stamps(stamp), lambda: wt._failed([proc]))
            finally:
                wt.stop([proc])


def idle_cost(system: str, url: str, redis_url: str, nats: str, server, windows) -> dict:
    """Counters per second of one idle worker (see the module docstring)."""
    if system == "postgres":
        return {"postgres_transactions_per_s": wt.idle_cost(url, PG_SYSTEM, windows)["per_second"]}
    # PostgreSQL only for the system that writes to it (the others never connect).
    counters = ({"postgres_transactions": lambda: perf.transactions(url)}
                if system == "jetstream" else {})
    if system == "redis_streams":
        client = embedded_redis.client(redis_url, timeout=30)
        redis_reset(client, 0)
        counters["redis_commands"] = lambda: int(client.info("stats")["total_commands_processed"])
        start = lambda: redis_worker(redis_url, "bench-redis-idle")  # noqa: E731
    else:
        def nats_messages():
            varz = server.monitor("varz")
            return int(varz["in_msgs"]) + int(varz["out_msgs"])
        counters["nats_messages"] = nats_messages
        if system == "jetstream_bare":
            bare_reset(nats, 0)
            start = lambda: bare_worker(nats, "bench-jsbare-idle")  # noqa: E731
        else:
            js_reset(url, nats, 0)
            start = lambda: js_worker(nats, "bench-js-idle")  # noqa: E731
    counts = []
    for window in windows:
        before = {k: c() for k, c in counters.items()}
        proc = start()
        time.sleep(window)  # the measuring window itself
        if (error := wt._failed([proc])) is not None:
            raise RuntimeError(f"{system}: the idle worker exited:\n{error}")
        wt.stop([proc])
        if system == "jetstream":
            perf.wait_gone(url, "bench-js-idle")
        counts.append({k: c() - before[k] for k, c in counters.items()})
    t1, t2 = windows
    return {f"{k}_per_s": round((counts[1][k] - counts[0][k]) / (t2 - t1), 2) for k in counters}


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = wt.run_options(__doc__.splitlines()[0], jobs=2000, systems=SYSTEMS, samples=50,
                            idle="4,24")
    parser.add_argument("--slow-jobs", type=int, default=60,
                        help="jobs per drain of the slow workload (0: no-op workload only)")
    parser.add_argument("--child-redis", help=argparse.SUPPRESS)
    parser.add_argument("--child-bare", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--gated", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workload", choices=list(WORKLOADS), default="noop",
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_redis:
        redis_child(args.child_redis, args.name, args.gated, args.workload)
        return 0
    if args.child_bare:
        js_bare_child(args.child_bare, args.name, args.gated, args.workload)
        return 0
    processes, systems, windows = wt.checked_run(parser, args, SYSTEMS)
    if args.slow_jobs < 0:
        parser.error("--slow-jobs must be >= 0")
    workloads = {"noop": args.jobs, **({"slow": args.slow_jobs} if args.slow_jobs else {})}
    db.database_url(start=True)  # set-up: the embedded server unless DATABASE_URL is set
    url = db.database_url()
    qt._check_local(url)
    machine_facts = wt.machine(url, args.note)  # before the run: the load it starts under
    started = time.monotonic()
    with embedded_redis.Server.private() as redis_server, \
            embedded_nats.Server.private() as nats_server:
        redis_url, nats = redis_server.url, nats_server.url
        drains = {
            "postgres": lambda p, n, w: wt.drain(url, PG_SYSTEM, p, n, timeout=300,
                                                 handlers=WORKLOADS[w]),
            "redis_streams": lambda p, n, w: redis_drain(redis_url, p, n, 300, w),
            "jetstream": lambda p, n, w: js_drain(url, nats, p, n, 300, w),
            "jetstream_bare": lambda p, n, w: bare_drain(nats, p, n, 300, w)}
        runs = []
        for rep in range(args.reps):
            order = systems[rep % len(systems):] + systems[:rep % len(systems)]
            for p in processes:
                for workload, n in workloads.items():
                    for system in order:
                        run = {"workload": workload, **drains[system](p, n, workload)}
                        run["system"] = system
                        runs.append(run)
                        print(json.dumps(run), file=sys.stderr, flush=True)

        def medians(workload: str) -> dict:
            return {s: {str(p): statistics.median(r["rate"] for r in runs
                                                  if r["workload"] == workload
                                                  and r["system"] == s and r["processes"] == p)
                        for p in processes} for s in systems}

        rates = medians("noop")
        lat, idle = {}, {}
        for n, system in enumerate(systems):
            perf.settle(url)  # not the drains' autovacuum and WAL flush
            lat[system] = latency(system, url, redis_url, nats, args.samples, seed=n)
            print(json.dumps({system: {k: v for k, v in lat[system].items() if k != "values"}}),
                  file=sys.stderr, flush=True)
        for system in systems:
            perf.settle(url)
            idle[system] = idle_cost(system, url, redis_url, nats, nats_server, windows)
            print(json.dumps({system: idle[system]}), file=sys.stderr, flush=True)
        redis_version = embedded_redis.client(redis_url).info("server")["redis_version"]
        nats_version = embedded_nats.info(nats)["version"]
    for schema in (JS_SCHEMA, BARE_SCHEMA, "bench_cq"):
        with psycopg.connect(url, autocommit=True) as conn:
            db.drop_schema(conn, schema)
    out = {"benchmark": "broker_throughput", "machine": machine_facts,
           "servers": {"redis": redis_version, "nats": nats_version},
           "parameters": {"jobs": args.jobs, "slow_jobs": args.slow_jobs,
                          "repetitions": args.reps, "processes": processes,
                          "systems": systems, "latency_samples": args.samples,
                          "idle_windows_s": list(windows)},
           "systems": {s: {"does": SYSTEMS[s], "default": True} for s in systems},
           "median_jobs_per_second": rates, "latency_s": lat, "idle_per_second": idle}
    if "slow" in workloads:
        out["slow"] = {
            "handler": WORKLOADS["slow"], "handler_sleep_s": perf.SLOW_S,
            "jobs": args.slow_jobs, "median_jobs_per_second": medians("slow"),
            # one job at a time per consumer, each at least SLOW_S long: N consumers finish
            # at most N / SLOW_S jobs per second
            "ceiling_jobs_per_second": {str(p): round(p / perf.SLOW_S, 1) for p in processes}}
    out["runs"] = runs
    perf.emit(out, args.out, machine=machine_facts, started=started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
