"""Performance and scale (chapter 11, bench/worker_throughput.py): what the queue costs, measured.

For the notebook:
- `load("worker_throughput")` reads a recorded benchmark run (`data/bench/*.json`, shipped
  with the package), with the machine facts it was recorded on;
- `commit_times(conn, commits, synchronous=...)` times `commits` one-row commits, waiting
  for the disk (synchronous_commit on) or not: the physical limit of a PostgreSQL queue;
- `drain_rate(conn, jobs, batch=...)` drains `jobs` pending no-op jobs in this process, one
  claim and one finish per job (batch 1) or `claim_many`/`finish_many` per `batch` jobs,
  with a progress bar, and returns jobs per second;
- `claim_cost(conn)` runs the claim under EXPLAIN (ANALYZE, BUFFERS) (rolled back): the pages
  it touched and the scans it used, a measure of cost that does not depend on timing;
- `wal_fsyncs(conn)`: the server's WAL fsync counter and the view it comes from
  (`pg_stat_io`, object `wal`, from PostgreSQL 18; `pg_stat_wal.wal_sync` before);
- `crash_before_flush(connect, count)`: a `queue.Worker` driven turn by turn until `count`
  results wait in its completion batch, then dropped without a flush (what a SIGKILL
  between a handler's return and the flush leaves behind);
- `throughput_mode(connect, jobs, prefetch=, batch=)`: a `queue.Worker` of the throughput mode
  (`prefetch`, its local queue, and a completion batch of `batch`) drains `jobs` no-op jobs
  in this process; its rate, and its claim and completion statements counted from the rows
  they wrote (each statement reads the database clock once), which do not depend on timing;
- `fence_cost(conn, rows)`: the fenced completion batch beside the same statement without
  the fence, under EXPLAIN (ANALYZE, BUFFERS), and a stale row refused within a batch;
- `stop_with_local_queue(connect, jobs, prefetch=)`: a graceful stop of the throughput mode,
  turn by turn: the jobs waiting in the local queue go back at once;
- `jobs_ceiling` and `summary` do the arithmetic.

For the benchmark's worker processes: `NOOP_HANDLERS` (the `noop` kind; with a `stamp` path in the
payload it appends "n time" to that file when it starts), `SLOW_HANDLERS` (the same jobs run by
a handler that waits `SLOW_S` seconds, chapter 13's slow workload), `read_stamps`, and the server-side
probes `waiting_on` (who waits at the start gate), `transactions` (the database's transaction
counter) and `wait_gone`.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from ... import sqlfile
from ...checks import (
    check_autocommit_idle,
    check_bool,
    check_finite,
    check_int,
    check_seconds,
    check_text,
)
from ...clock import ManualClock
from ...localserver import shown
from ...queue import Worker, jobs
from ..probes import plans

__all__ = ["NOOP_HANDLERS", "SLOW_HANDLERS", "SLOW_S", "claim_cost", "fence_cost", "generic_plan", "commit_times", "crash_before_flush", "describe_url",
           "drain_rate", "jobs_ceiling", "load", "machine", "noop", "query", "read_stamps",
           "recorded", "settings", "slow", "stamp", "stop_with_local_queue", "summary",
           "throughput_mode", "transactions",
           "wait_gone",
           "waiting_on", "wal_fsyncs"]

query = sqlfile.load(__package__, "perf.sql")
"""The named statements of `sql/perf.sql`: `query("name").sql` to read, print or EXPLAIN."""
CLAIM_PARAMS = {"limit": 1, "lease": 30.0, "kinds": None, "worker": "perf", "chosen": None}


# ------------------------------------------------------------------ recorded runs


def recorded() -> list[str]:
    """The names of the recorded benchmark runs (`data/bench/<name>.json`)."""
    folder = resources.files("cachequeue.course") / "data" / "bench"
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir()
                  if p.name.endswith(".json"))


def load(name: str) -> dict[str, Any]:
    """A recorded benchmark run, e.g. load("worker_throughput"): its JSON document."""
    check_text(name, "name")
    if name not in recorded():
        raise ValueError(f"no recorded run {name!r}; recorded: {recorded()}")
    path = resources.files("cachequeue.course") / "data" / "bench" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def emit(document: dict[str, Any], out: Path | None = None, *,
         machine: dict[str, Any] | None = None, started: float | None = None) -> None:
    """A benchmark's run as the scripts in bench/ give it: one JSON document on stdout, and
    in `out` too when given (how data/bench/*.json is recorded). With `machine` (the run's
    machine facts), the load average at the end goes into it; with `started` (a
    time.monotonic() reading), the run's seconds go into the document."""
    if machine is not None:
        machine["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    if started is not None:
        document["seconds"] = round(time.monotonic() - started, 1)
    text = json.dumps(document, indent=2, default=str)
    if out is not None:
        Path(out).write_text(text + "\n", encoding="utf-8")
    print(text)


# ------------------------------------------------------------------ arithmetic


def summary(values: Sequence[float]) -> dict[str, Any]:
    """p50, p99 and max of some seconds (p99 by linear interpolation), and the values, rounded."""
    if not values:
        raise ValueError("summary() needs at least one value")
    ordered = sorted(check_finite(v, "each value") for v in values)
    p99 = ordered[0] if len(ordered) == 1 else statistics.quantiles(
        ordered, n=100, method="inclusive")[98]
    return {"p50": round(statistics.median(ordered), 5), "p99": round(p99, 5),
            "max": round(ordered[-1], 5), "values": [round(v, 5) for v in ordered]}


def jobs_ceiling(commits_per_second: float, commits_per_job: float) -> float:
    """The most jobs per second a server that commits `commits_per_second` can complete."""
    return (check_finite(commits_per_second, "commits_per_second", above=0)
            / check_finite(commits_per_job, "commits_per_job", above=0))


# ------------------------------------------------------------------ live measurements


def commit_times(conn: psycopg.Connection, commits: int, *,
                 synchronous: bool = True) -> list[float]:
    """The seconds each of `commits` one-row INSERTs took in autocommit, each its own commit,
    with synchronous_commit on (each waits for the WAL flush: fdatasync) or off.
    Commits per second: len(times) / sum(times)."""
    check_int(commits, "commits", minimum=1)
    check_bool(synchronous, "synchronous")
    check_autocommit_idle(conn, "commit_times")
    conn.execute(query("commits_table").sql)
    conn.execute(query("synchronous_commit").sql, {"value": "on" if synchronous else "off"})
    times = []
    try:
        for n in range(commits):
            started = time.perf_counter()
            conn.execute(query("commit_one").sql, {"n": n})
            times.append(time.perf_counter() - started)
    finally:
        conn.execute(query("synchronous_commit").sql, {"value": "on"})
    return times


def drain_rate(conn: psycopg.Connection, count: int, *, batch: int = 1,
               progress: bool = True) -> float:
    """Submit `count` pending no-op jobs (one statement, not timed), then drain the queue in
    this process and return jobs per second: with batch 1, `jobs.claim` + `jobs.finish` per
    job; else `jobs.claim_many(batch)` + one `jobs.finish_many` per batch (one commit per
    batch). Jobs that were pending before are drained and counted too."""
    check_int(count, "count", minimum=1)
    check_int(batch, "batch", minimum=1, maximum=1000)
    check_bool(progress, "progress")
    already = conn.execute(query("unsettled_jobs").sql).fetchone()[0]
    plans.fill_pending(conn, count)
    from tqdm import tqdm  # the plain bar, on stderr (no widget in saved notebooks)

    done = 0
    with tqdm(total=count + already, desc=f"batch={batch}", disable=not progress,
              leave=False) as bar:  # the jobs pending before are drained (and shown) too
        started = time.perf_counter()
        while True:
            if batch == 1:
                claim = jobs.claim(conn, worker="perf")
                if claim is None:
                    break
                jobs.finish(conn, claim, None)
                n = 1
            else:
                claims = jobs.claim_many(conn, batch, worker="perf")
                if not claims:
                    break
                n = sum(jobs.finish_many(conn, [(c, None) for c in claims]))
            done += n
            bar.update(n)
        took = time.perf_counter() - started
    if done < count + already:
        raise RuntimeError(f"drained {done} jobs, expected {count}: another worker is running")
    return done / took


def claim_cost(conn: psycopg.Connection) -> dict[str, Any]:
    """Run the claim (limit 1) under EXPLAIN (ANALYZE, BUFFERS), rolled back: the shared
    buffers it touched (hit + read, planning excluded), how it read `jobs`, and the time."""
    doc = plans.explain(conn, jobs.query("claim").sql, CLAIM_PARAMS, analyze=True)
    top = doc[0]["Plan"]
    return {"buffers": top["Shared Hit Blocks"] + top["Shared Read Blocks"],
            "scans": sorted(plans.scans(doc)), "seq_scans": plans.seq_scans(doc),
            "execution_ms": doc[0]["Execution Time"]}


def wal_fsyncs(conn: psycopg.Connection) -> dict[str, Any]:
    """{"view", "fsyncs"}: how many times the server has fsynced its WAL since the counters
    were reset, from `pg_stat_io` (object 'wal', PostgreSQL 18+: pg_stat_wal lost its
    wal_sync column) or `pg_stat_wal.wal_sync` (14-17). Counted whatever track_wal_io_timing
    says; the times (fsync_time, wal_sync_time) need it on."""
    version = conn.execute(query("server_version_num").sql).fetchone()[0]
    name = "wal_fsyncs_io" if version >= 180000 else "wal_fsyncs_wal"
    view = "pg_stat_io" if version >= 180000 else "pg_stat_wal"
    conn.execute(query("clear_snapshot").sql)
    return {"view": view, "fsyncs": conn.execute(query(name).sql).fetchone()[0]}


def crash_before_flush(connect: Callable[[], psycopg.Connection], count: int, *,
                       timeout: float = 30.0) -> dict[str, Any]:
    """Let a `queue.Worker` (concurrency `count`, no listener, a manual clock that never
    reaches its batch_wait) claim and run `count` pending no-op jobs, turn by turn, until
    all their results wait in its completion batch; then drop it without a flush, as a
    SIGKILL at that moment would. Returns the handler runs and the worker's counts."""
    check_int(count, "count", minimum=1, maximum=100)
    check_seconds(timeout, "timeout")
    ran = []
    worker = Worker(connect, {"noop": lambda payload: ran.append(1)}, concurrency=count,
                    listen=False, clock=ManualClock(), name="crash-before-flush")
    totals: Counter = Counter()
    deadline = time.monotonic() + timeout
    while worker.batched < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {worker.batched} of {count} results batched; {totals}")
        worker.wait(0.5)  # a handler thread's wake-up byte, not a guess
        totals += worker.run_once()
    worker.abandon()
    return {"handler_runs": len(ran), "claimed": totals["claimed"],
            "finished": totals["finished"], "batches": totals["batches"]}


MODE_JOBS = 20_000  # jobs a throughput_mode run drains, at most


def throughput_mode(connect: Callable[[], psycopg.Connection], count: int, *, prefetch: int,
                    batch: int, concurrency: int = 4, timeout: float = 120.0) -> dict[str, Any]:
    """Submit `count` pending no-op jobs (one statement, not timed), drain them with one
    `queue.Worker(prefetch=prefetch, batch=batch, concurrency=concurrency)` running in this
    process (prefetch 0: the default mode), stop it, and return: `rate` (jobs per second,
    from the worker's start to the last completion it saw), `claims` and `completions` (the
    statements that claimed and finished these jobs, counted from the rows they wrote),
    `largest_claim` / `largest_completion` (rows in the largest of each), `commits_per_job`
    ((claims + completions) / jobs: each is one autocommit statement), `attempts` and `done`.
    A schema with jobs pending or running already is refused (ValueError, nothing written):
    their claims would mix with the run's."""
    check_int(count, "count", minimum=1, maximum=MODE_JOBS)
    check_int(prefetch, "prefetch", minimum=0, maximum=5000)
    check_int(batch, "batch", minimum=1, maximum=5000)
    check_int(concurrency, "concurrency", minimum=1, maximum=100)
    check_seconds(timeout, "timeout")
    with connect() as conn:
        unsettled = conn.execute(query("unsettled_jobs").sql).fetchone()[0]
        if unsettled:
            raise ValueError(f"{unsettled} jobs are pending or running in this schema: their "
                             "claims would mix with the run's; drain or reset it first")
        after = conn.execute(query("last_job_id").sql).fetchone()[0]
        plans.fill_pending(conn, count)
    worker = Worker(connect, NOOP_HANDLERS, concurrency=concurrency, prefetch=prefetch,
                    batch=batch, listen=False, name=f"mode-p{prefetch}-b{batch}")
    thread = threading.Thread(target=worker.run, name="throughput-mode", daemon=True)
    started = time.perf_counter()
    thread.start()
    deadline = started + timeout
    try:
        while worker.stats["finished"] < count:  # the loop thread's counts; read only
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{worker.stats['finished']} of {count} jobs finished in "
                                   f"{timeout:g} s: {dict(worker.stats)}")
            time.sleep(0.005)
        took = time.perf_counter() - started
    finally:
        worker.stop_now()
        thread.join(timeout)
    with connect() as conn:
        row = conn.execute(query("mode_statements").sql, {"after": after}).fetchone()
    claims, completions, largest_claim, largest_completion, done, attempts = row
    return {"jobs": count, "prefetch": prefetch, "batch": batch, "concurrency": concurrency,
            "rate": count / took, "seconds": took, "claims": claims, "completions": completions,
            "largest_claim": largest_claim, "largest_completion": largest_completion,
            "commits_per_job": (claims + completions) / count, "attempts": attempts,
            "done": done}


def fence_cost(conn: psycopg.Connection, count: int) -> dict[str, Any]:
    """What fencing costs a completion batch of `count` rows: `count` pending jobs are
    claimed in one statement, then the real `finish_many` (every row checked against its own
    lease token and expiry) and the same statement with that check cut out (verify's
    `unfenced-batch` mutant, the shape of graphile-worker's and River's batches) run under
    EXPLAIN (ANALYZE, BUFFERS), each rolled back, alternately, three times each: the
    shared buffers (pages) and milliseconds of each run. Then one job's lease runs out,
    another claim takes it over, and the real `finish_many` writes the whole batch: `accepted`
    (rows it took) and `refused` (job ids it refused). Nothing is left running."""
    from ...verify import variants  # the mutant's text: the real statement minus the fence

    claims, params = _claimed_batch(conn, count, "fence-cost")
    runs: dict[str, list[dict[str, float]]] = {"fenced": [], "unfenced": []}
    statements = {"fenced": jobs.query("finish_many").sql,
                  "unfenced": variants.mutant_sql("finish_many_unfenced")}
    for _ in range(3):
        for name, text in statements.items():
            top = plans.explain(conn, text, params, analyze=True)[0]
            runs[name].append({"buffers": top["Plan"]["Shared Hit Blocks"]
                               + top["Plan"]["Shared Read Blocks"],
                               "ms": top["Execution Time"]})
    conn.execute(query("expire_lease").sql, {"job_id": claims[0].job_id})
    taker = jobs.claim(conn, worker="fence-cost-2")
    written = jobs.finish_many(conn, [(c, None) for c in claims])
    jobs.finish(conn, taker, None)
    return {"rows": len(claims), "runs": runs, "accepted": sum(written),
            "refused": [c.job_id for c, ok in zip(claims, written, strict=True) if not ok],
            "taken_over": taker.job_id}


def _claimed_batch(conn: psycopg.Connection, count: int,
                   worker: str) -> tuple[list[jobs.Claim], dict[str, str]]:
    """`count` new pending jobs claimed by `worker` in one statement, and the parameters of
    the finish_many that would complete them all (outputs null). Refuses a schema that has
    jobs pending or running already (their claims would mix with these)."""
    check_int(count, "count", minimum=2, maximum=5000)
    check_autocommit_idle(conn, "conn")
    if conn.execute(query("unsettled_jobs").sql).fetchone()[0]:
        raise ValueError("jobs are pending or running in this schema: drain or reset it first")
    plans.fill_pending(conn, count)
    claims = jobs.claim_many(conn, count, worker=worker)
    return claims, jobs.finish_many_params([c.job_id for c in claims],
                                           [c.lease_token for c in claims],
                                           ["null"] * len(claims), claims[0].schema)


def generic_plan(conn: psycopg.Connection, count: int) -> dict[str, Any]:
    """Why `jobs.finish_many` is planned at every call (`jobs.BATCH_PLAN`). `count` pending
    jobs are claimed in one statement (after an ANALYZE of the jobs table), then the finish_many
    of all of them runs under EXPLAIN ANALYZE, rolled back, in two forms and with two plans each:

    - forms: `arrays` sends the batch as three array parameters (`unnest($1, $2, $3)`, the
      statement's first form), `texts` as three texts lined up by `ROWS FROM` (its form now);
    - plans: `custom`, made for these values (unprepared, as psycopg sends it with
      prepare=False), and `generic`, made without looking at them (a prepared statement under
      `plan_cache_mode = force_generic_plan`: the plan PostgreSQL may keep after five runs).

    `auto` (per form): the same prepared statement run AUTO_RUNS times under the default
    `plan_cache_mode = auto`, rolled back: how many runs PostgreSQL planned for their values
    (`custom_plans`) and how many it ran with the generic plan (`generic_plans`), read from
    pg_prepared_statements (PostgreSQL 14 and later).

    Each of the four plans: `ms` (execution time), `batch_estimate` (the rows the planner expected
    from the batch; it has `count`), `join` (how the batch meets the held jobs: the join node
    under the UPDATE of jobs) and `compared` (rows that join read and threw away, its "Rows
    Removed by Join Filter", plus the rows it returned). Then the batch is finished for real."""
    conn.execute("ANALYZE jobs")  # the planner's picture of the table as it is now
    claims, texts = _claimed_batch(conn, count, "generic-plan")
    arrays = {"job_ids": [c.job_id for c in claims], "lease_tokens": [c.lease_token for c in claims],
              "outputs": ["null"] * len(claims), "schema": claims[0].schema}
    statement = jobs.query("finish_many").sql
    forms = {"arrays": (_arrays_form(statement), arrays, ("bigint[]", "uuid[]", "text[]", "text")),
             "texts": (statement, texts, ("text", "text", "text", "text"))}
    found: dict[str, dict[str, Any]] = {}
    for form, (text, params, types) in forms.items():
        found[form] = {"custom": _plan_facts(plans.explain(conn, text, params, analyze=True)),
                       "generic": _plan_facts(_generic_explain(conn, text, params, types)),
                       "auto": _auto_plans(conn, text, params, types, AUTO_RUNS)}
    written = jobs.finish_many(conn, [(c, None) for c in claims])
    if not all(written):
        raise RuntimeError("another claim took some of these jobs meanwhile: run it on a "
                           "schema no worker uses")
    return {"rows": len(claims), **found}


def _arrays_form(statement: str) -> str:
    """finish_many with its batch as three array parameters, as it was first written."""
    texts = ("ROWS FROM (unnest(%(job_ids)s::bigint[]), unnest(%(lease_tokens)s::uuid[]),\n"
             "                    jsonb_array_elements(%(outputs)s::jsonb))")
    if statement.count(texts) != 1:
        raise RuntimeError("finish_many no longer reads its batch with ROWS FROM: "
                           "update perf._arrays_form")
    return statement.replace(texts, "unnest(%(job_ids)s::bigint[], %(lease_tokens)s::uuid[], "
                                    "%(outputs)s::text[]::jsonb[])")


def _generic_explain(conn: psycopg.Connection, text: str, params: Mapping[str, Any],
                     types: Sequence[str]) -> Any:
    """EXPLAIN ANALYZE of `text` prepared and run with its generic plan, rolled back."""
    cursor = psycopg.ClientCursor(conn)  # EXECUTE's arguments as literals
    try:
        with conn.transaction():
            _prepare(conn, _placeholders(text, params), types)
            conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            cursor.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
                                   "EXECUTE generic_finish_many ({})").format(
                               _execute_args(params, types)).as_string(conn), params)
            doc = cursor.fetchone()[0]
            conn.execute("DEALLOCATE generic_finish_many")
            raise _RolledBack(doc)
    except _RolledBack as done:
        return done.args[0]


AUTO_RUNS = 8  # runs of the prepared statement in generic_plan's `auto` reading


def _prepare(conn: psycopg.Connection, prepared: str, types: Sequence[str]) -> None:
    if conn.execute(query("prepared_here").sql).fetchone()[0]:  # left by a failed call
        conn.execute("DEALLOCATE generic_finish_many")
    conn.execute(sql.SQL("PREPARE generic_finish_many ({}) AS {}").format(
        sql.SQL(", ").join(map(sql.SQL, types)), sql.SQL(prepared)))


def _execute_args(params: Mapping[str, Any], types: Sequence[str]) -> sql.Composable:
    return sql.SQL(", ").join(sql.SQL("%({})s::{}").format(sql.SQL(name), sql.SQL(kind))
                              for name, kind in zip(params, types, strict=True))


def _placeholders(text: str, params: Mapping[str, Any]) -> str:
    for k, name in enumerate(params, 1):
        text = text.replace(f"%({name})s", f"${k}")
    return text


def _auto_plans(conn: psycopg.Connection, text: str, params: Mapping[str, Any],
                types: Sequence[str], runs: int) -> dict[str, int]:
    """Run `text` prepared `runs` times with plan_cache_mode = auto, rolled back; the plans
    PostgreSQL chose, from pg_prepared_statements."""
    cursor = psycopg.ClientCursor(conn)
    try:
        with conn.transaction():
            _prepare(conn, _placeholders(text, params), types)
            conn.execute("SET LOCAL plan_cache_mode = auto")
            statement = sql.SQL("EXECUTE generic_finish_many ({})").format(
                _execute_args(params, types)).as_string(conn)
            for _ in range(runs):
                cursor.execute(statement, params)
            custom, generic = conn.execute(query("prepared_plans").sql).fetchone()
            conn.execute("DEALLOCATE generic_finish_many")
            raise _RolledBack({"custom_plans": custom, "generic_plans": generic})
    except _RolledBack as done:
        return done.args[0]


def _plan_facts(doc: Any) -> dict[str, Any]:
    doc = json.loads(doc) if isinstance(doc, str) else doc
    update = next(n for n in plans.nodes(doc[0]["Plan"])
                  if n["Node Type"] == "ModifyTable" and n.get("Relation Name") == "jobs")
    join = next(n for n in plans.nodes(update) if n["Node Type"] in _JOINS)
    batch = next(n for n in plans.nodes(doc[0]["Plan"]) if n["Node Type"] == "Function Scan")
    return {"ms": round(doc[0]["Execution Time"], 3), "batch_estimate": batch["Plan Rows"],
            "join": join["Node Type"],
            "compared": int(join.get("Rows Removed by Join Filter", 0) + join["Actual Rows"])}


_JOINS = ("Nested Loop", "Hash Join", "Merge Join")


class _RolledBack(Exception):
    """Leaves a transaction block so that it rolls back."""


def stop_with_local_queue(connect: Callable[[], psycopg.Connection], count: int, *,
                          prefetch: int, timeout: float = 30.0) -> dict[str, Any]:
    """A graceful stop in the throughput mode, turn by turn: a `queue.Worker` (concurrency
    1, `prefetch`, no listener, a manual clock) claims `count` pending no-op jobs; its one
    handler thread holds the first until told to go. Then `stop()`: the next turn hands the
    jobs waiting in the local queue back at once (no clock moved, the shutdown timeout is
    30 s), and the running one is let go and finished. Returns the first turn's and the stop
    turn's counts, and the jobs' states and hand-back counts after each step."""
    check_int(count, "count", minimum=2, maximum=100)
    check_int(prefetch, "prefetch", minimum=1, maximum=100)
    check_seconds(timeout, "timeout")
    gate, started = threading.Event(), threading.Event()

    def held(payload: Mapping[str, Any]) -> None:
        started.set()
        gate.wait(timeout)

    with connect() as conn:
        if conn.execute(query("unsettled_jobs").sql).fetchone()[0]:
            raise ValueError("jobs are pending or running in this schema: drain or reset it first")
        after = conn.execute(query("last_job_id").sql).fetchone()[0]
        plans.fill_pending(conn, count)
    worker = Worker(connect, {"noop": held}, concurrency=1, prefetch=prefetch, listen=False,
                    shutdown_timeout=30.0, clock=ManualClock(), name="stop-with-local-queue")
    try:
        first = worker.run_once()
        if not started.wait(timeout):
            raise TimeoutError("the handler thread never started the first job")
        worker.stop()
        stop_turn = worker.run_once()
        with connect() as conn:
            at_stop = conn.execute(query("jobs_after").sql, {"after": after}).fetchall()
        gate.set()
        rest: Counter = Counter()
        deadline = time.monotonic() + timeout
        while not worker.finished:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the worker did not finish its running job: {rest}")
            worker.wait(0.5)
            rest += worker.run_once()
    finally:
        gate.set()
        worker.close()
    with connect() as conn:
        at_end = conn.execute(query("jobs_after").sql, {"after": after}).fetchall()
    return {"first_turn": dict(first), "stop_turn": dict(stop_turn), "rest": dict(rest),
            "at_stop": [dict(zip(("job", "state", "attempts", "handbacks"), r, strict=True))
                        for r in at_stop],
            "at_end": [dict(zip(("job", "state", "attempts", "handbacks"), r, strict=True))
                       for r in at_end]}


# ------------------------------------------------------------------ the benchmark's worker side


def stamp(path: str, n: int) -> None:
    """Append "n time.time()" to `path` (a handler's start, read back by read_stamps)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{int(n)} {time.time():.6f}\n")


def read_stamps(path: str) -> dict[int, float]:
    """{n: start time} from a stamp file (empty before the first stamp)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    return {int(n): float(t) for n, t in (line.split() for line in lines if line.count(" ") == 1)}


def noop(payload: Mapping[str, Any]) -> None:
    """The `noop` kind: nothing, unless the payload names a stamp file (latency samples)."""
    if payload.get("stamp") and "n" in payload:
        stamp(payload["stamp"], payload["n"])


NOOP_HANDLERS = {"noop": noop}
"""`cachequeue worker --handlers cachequeue.course.labs.perf:NOOP_HANDLERS`."""

SLOW_S = 0.05
"""Seconds the slow handler waits: I/O-bound work (a call to a model, a vendor's API) that
leaves the CPU idle. One job per consumer therefore takes at least this long."""


def slow(payload: Mapping[str, Any]) -> None:
    """The slow handler: what `noop` does (the stamp of its start), then `SLOW_S` seconds of
    waiting (time.sleep), the same in every system's consumer."""
    noop(payload)
    time.sleep(SLOW_S)


SLOW_HANDLERS = {"noop": slow}
"""The benchmark's `noop` jobs run by the slow handler:
`cachequeue worker --handlers cachequeue.course.labs.perf:SLOW_HANDLERS`."""


def waiting_on(conn: psycopg.Connection, names: Sequence[str]) -> set[str]:
    """Which of these application names have a backend waiting for a lock: held by the start
    gate, or by a worker that is itself waiting for the gate."""
    rows = conn.execute(query("waiting_on").sql, {"names": [check_text(n, "each name")
                                                               for n in names]})
    return {name for (name,) in rows}


def transactions(url: str) -> int:
    """The database's transaction counter (commits + rollbacks), read on a new connection."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(query("clear_snapshot").sql)
        return conn.execute(query("transactions").sql).fetchone()[0]


def settle(url: str) -> None:
    """Let the server finish what earlier drains left it before a quiet measurement: VACUUM
    (ANALYZE) the database, so that autovacuum has nothing to do in the windows that follow
    (its transactions count in the database's counter that the idle cost reads), then
    CHECKPOINT, so that the WAL the drains wrote is not flushed in the middle of the latency
    samples (a submit's commit waiting behind it). Needs the server owner or a superuser,
    as the bench's connections are."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")


def wait_gone(url: str, name: str, timeout: float = 30.0) -> None:
    """Return once no backend carries application name `name` (its statistics are flushed
    when it exits), plus a short settle for the last flush."""
    check_seconds(timeout, "timeout")
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while conn.execute(query("backends_named").sql, {"name": name}).fetchone()[0]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"backends named {name!r} still there after {timeout:g} s")
            time.sleep(0.05)
    time.sleep(0.5)


def describe_url(url: str) -> str:
    """host:port/dbname of a connection string (never the password); a socket folder as it
    reads from any clone (`localserver.shown`: '.pgdata/...', not this machine's path)."""
    info = conninfo_to_dict(url)
    host = shown(info.get("host", "local socket"))
    return f"{host}:{info.get('port', 5432)}/{info.get('dbname', '')}"


def settings(conn: psycopg.Connection) -> dict[str, str]:
    """The server's version and the settings that decide what a commit costs: fsync,
    synchronous_commit, wal_sync_method, shared_buffers."""
    row = conn.execute(query("server_facts").sql).fetchone()
    names = ("server_version", "fsync", "synchronous_commit", "wal_sync_method", "shared_buffers")
    return dict(zip(names, row, strict=True))


def machine(conn: psycopg.Connection, url: str) -> dict[str, Any]:
    """The machine facts a recorded run carries: date, cores, platform, Python, the server."""
    return {"date": datetime.now(UTC).strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version(),
            "postgresql": settings(conn), "server": describe_url(url)}
