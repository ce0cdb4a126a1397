"""Chaos: worker processes killed, paused and respawned at random, the server restarted; what survived.

`run(jobs=2000, workers=4, seed=7)` starts a private server (`embedded.Server.private()`,
whatever DATABASE_URL says), submits `jobs` `effect` jobs (course.handlers: a vendor call per run,
a charge booked once per business key, a result naming the attempt that computed it), and
starts `workers` `cachequeue worker` processes. As the jobs get done it carries out a plan
drawn from `seed`: SIGKILL a worker the moment it reports a job started (and start a fresh
one in its place), SIGKILL one while a finished job's result waits for the completion
batch (at its `batching` line the worker is frozen with SIGSTOP, the job checked to be
still unwritten, then killed: between the handler's return and the flush, so only the
acknowledgement is lost and the job must run again), SIGSTOP a worker in the
middle of a long job (the first worker to start one) for longer than its lease (then
SIGCONT, once another worker has taken the job over: its late report must be refused), restart the server. `batch` / `batch_wait` are the workers' `--batch` and
`--batch-wait` (`batch=1`: every finish its own commit, and no flush kills). When every job is
done (or `time_limit` passed) it stops the workers with SIGTERM and returns a JSON-able
dict: the plan carried out, the workers' exit statuses, what their logs counted, and the
verdict of `sql/chaos.sql` (lost, duplicates, results not written by their own attempt,
jobs stuck in running, stale reports rejected ...). `failures(result)` lists every broken
invariant, each with the seed that reproduces the run. With `record=True` the result also
has the run's `timeline`, read before the private server is thrown away (see `run`), which
`course.views.chaoslanes` draws as lanes.

Every wait is for an event (a log line, a takeover in the tables), bounded by a patience
derived from the lease and the poll (`patience(lease, poll)`), never a guess that something
has happened by now: the run gives the same verdict on an idle laptop and on two busy cores.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg

from ... import db, embedded, sqlfile
from ...checks import check_bool, check_int, check_seconds
from ...queue.notify import CONNECTION_ERRORS, listen
from .. import chapter
from ..app import effects
from .fleet import Fleet, WorkerProcess

__all__ = ["MEANINGS", "explained", "failures", "patience", "run"]

_QUERIES = sqlfile.load(__package__, "chaos.sql")

MEANINGS = {
    "jobs": "提交的任务数",
    "done": "以 done 结束的任务数",
    "lost": "没有结果行的任务（丢失）",
    "duplicates": "结果行不止一行的任务（重复）",
    "stuck_running": "停在 running 的任务",
    "not_one_finished_attempt": "以 done 结束的尝试不是恰好一次的任务",
    "results_not_of_their_attempt": "结果行的令牌不属于以 done 结束的那次尝试的任务",
    "outputs_not_of_their_attempt": "输出里处理函数写下的令牌与结果行的令牌不同的任务",
    "not_one_charge": "扣款记账不是恰好一笔的任务",
    "handler_runs": "处理函数一共运行的次数（含被杀、被接手的执行）",
    "attempts": "尝试记录的总数",
    "open_attempts": "没有关闭的尝试",
    "expired_attempts": "因租约到期而结束的尝试",
    "released_attempts": "被交还的尝试",
    "stale_reports_rejected": "带着失效令牌、被拒绝的迟到报告",
}
"""What each key of a run's verdict counts (every count is read from the tables)."""

def explained(verdict: dict[str, Any], keys: Any = None) -> list[tuple[str, int, str]]:
    """(key, count, meaning) for `keys` of a verdict (default: all of MEANINGS, in order)."""
    chosen = list(MEANINGS) if keys is None else list(keys)
    unknown = [k for k in chosen if k not in MEANINGS or k not in verdict]
    if unknown:
        raise ValueError(f"not keys of a chaos verdict: {unknown}")
    return [(k, verdict[k], MEANINGS[k]) for k in chosen]
SCHEMA = "chaos"
FAULT_SIGNALS = ("SIGKILL", "SIGSTOP", "SIGCONT")
"""The signals a recorded timeline keeps (the final SIGTERMs are the run's end, no fault)."""
LONG = (0.3, 0.6)  # seconds of work of a long job (one in five): what a SIGSTOP interrupts
SHORT = (0.005, 0.04)


def patience(lease: float, poll: float) -> float:
    """Seconds to wait for an event that a working fleet produces within a lease and a poll
    (a job started, a batch opened, an expired job taken over), with room for a loaded
    machine; past it, the run acts anyway (or counts the event as missing)."""
    return max(5.0, 4 * (lease + poll))


def _plan(rng: random.Random, jobs: int, kills: int, stops: int, restarts: int,
          flush_kills: int = 0) -> tuple[list, list]:
    """(done-count milestone, action) pairs, in the order they will happen, and the stops'
    milestones, counted in jobs *started*. Flush kills come early, while most jobs are still
    to do (a batch opens every few jobs then). A stop freezes a worker inside a long job, so
    it comes while at least half the jobs are still to start: the done count lags behind the
    starts (a result waits for its batch, after a restart for the reconnect; seen on two
    loaded cores: 76 of 200 done when all 200 had started, and no long job left to catch)."""
    actions = ["kill"] * kills + ["stop"] * stops + ["restart"] * restarts
    drawn = [(rng.randint(jobs // 20, jobs * 17 // 20), a) for a in actions]
    plan = [(at, a) for at, a in drawn if a != "stop"]
    plan += [(rng.randint(jobs // 20, jobs // 4), "flushkill") for _ in range(flush_kills)]
    return sorted(plan), sorted(at // 2 for at, a in drawn if a == "stop")


class _Monitor:
    """Counts done jobs; wakes on the jobs channel and reconnects after a restart."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: psycopg.Connection | None = None

    def done(self, wait: float) -> int | None:
        try:
            if self.conn is None:
                self.conn = db.connect(SCHEMA, url=self.url)
                listen(self.conn)
            for _ in self.conn.notifies(timeout=wait, stop_after=1):
                pass
            return self.conn.execute(_QUERIES["done_count"].sql).fetchone()[0]
        except CONNECTION_ERRORS:
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            time.sleep(wait)  # the server is restarting: look again shortly
            return None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def run(*, jobs: int = 2000, workers: int = 4, seed: int = 0, kills: int = 12, stops: int = 8,
        restarts: int = 1, concurrency: int = 2, lease: float = 1.0, poll: float = 0.1,
        restart_mode: str = "immediate", time_limit: float = 600.0, batch: int = 100,
        batch_wait: float = 0.45, flush_kills: int = 0, long: tuple[float, float] = LONG,
        progress: bool = False, record: bool = False) -> dict[str, Any]:
    """Run the chaos experiment (see the module docstring) and return its result.
    `flush_kills` (batching only) are planned, carried out and reported only when > 0.
    `long` is the range of a long job's seconds of work: the window a SIGSTOP must land in
    (and `batch_wait` the window of a flush kill); a busy machine needs them wider.

    `record=True` adds `timeline` (JSON-able, every time in seconds since `since`, the
    moment the first worker was started): `attempts`, every job_attempts row (job, attempt,
    worker, start, end, outcome, rejected, rejected_at; database clock); `signals`, every
    SIGKILL / SIGSTOP / SIGCONT sent to a worker (worker, signal, at; the final SIGTERMs
    are not faults and are left out); `restarts`, (from, to) of each server restart. The
    default (False) leaves the result as it was."""
    check_int(jobs, "jobs", minimum=20)
    check_int(workers, "workers", minimum=2)
    check_seconds(time_limit, "time_limit")
    check_int(batch, "batch", minimum=1)
    check_seconds(batch_wait, "batch_wait", allow_zero=True)
    check_int(flush_kills, "flush_kills", minimum=0)
    check_bool(record, "record")
    if (not isinstance(long, tuple) or len(long) != 2
            or not 0 < check_seconds(long[0], "long[0]") <= check_seconds(long[1], "long[1]") <= 30):
        raise ValueError(f"long is (shortest, longest) seconds of a long job, 0 < a <= b <= 30, got {long!r}")
    if flush_kills and batch == 1:
        raise ValueError("flush_kills need batching (batch > 1): without it there is no flush")
    rng = random.Random(seed)
    plan, stops_at = _plan(rng, jobs, kills, stops, restarts, flush_kills)
    long_jobs: set[int] = set()
    wait = patience(lease, poll)
    options = {"lease": lease, "poll": poll, "concurrency": concurrency, "shutdown_timeout": 5,
               "batch": batch, "batch_wait": batch_wait}
    done_actions: Counter = Counter()
    landed = 0  # flush kills that found the job still not done: they hit the window
    started = time.monotonic()
    with embedded.Server.private() as server:
        with db.connect(url=server.url) as conn:
            chapter.reset(conn, SCHEMA)
            effects.install(conn)
            with conn.transaction():
                for n in range(jobs):
                    slow = rng.random() < 0.2
                    work = rng.uniform(*(long if slow else SHORT))
                    job_id = _submit(conn, n, work)
                    if slow:
                        long_jobs.add(job_id)
        fleet = Fleet(SCHEMA, url=server.url)
        monitor = _Monitor(server.url)
        bar = _bar(progress, jobs)
        restarts_at: list[tuple[datetime, datetime]] = []
        since = datetime.now(UTC)
        try:
            generation = Counter()
            live = [fleet.start(f"w{slot}", **options) for slot in range(1, workers + 1)]
            paused: list[_Pause] = []
            done = 0
            # An action whose milestone was passed is carried out even if the last jobs got
            # done meanwhile (a batch of results lands at once): the plan is the plan.
            while ((done < jobs or (plan and plan[0][0] <= done) or stops_at)
                   and time.monotonic() - started < time_limit):
                now = time.monotonic()
                for entry in [p for p in paused if p.due(now, server.url)]:
                    entry.worker.resume()
                    paused.remove(entry)
                    live.append(entry.worker)
                if stops_at and len(live) > 1 and len(fleet.find("started")) >= stops_at[0]:
                    stops_at.pop(0)
                    # Frozen inside a long job, so that its report comes after the lease
                    # (an idle worker only if no long job started for a while).
                    caught = _freeze_at(fleet, live, server.url, wait, "started",
                                        lambda e: e.get("job") in long_jobs)
                    if caught is None:
                        victim, event = rng.choice(live), None
                        victim.pause()
                    else:
                        victim, event = caught
                    live.remove(victim)
                    # Past its lease at the earliest; then as soon as its job was taken
                    # over (so its report comes late for sure), or after `wait` more.
                    earliest = time.monotonic() + lease + poll + rng.uniform(0.3, 1.0)
                    paused.append(_Pause(victim, earliest, earliest + wait, event))
                    done_actions["stop"] += 1
                if plan and done >= plan[0][0]:
                    action = plan.pop(0)[1]
                    if action == "restart":
                        down = datetime.now(UTC)
                        server.restart(restart_mode)
                        restarts_at.append((down, datetime.now(UTC)))
                    elif action in ("kill", "flushkill"):
                        victim, batched = rng.choice(live), None
                        if action == "kill":
                            _at_started(victim, wait)
                        elif (caught := _freeze_at(fleet, live, server.url, wait,
                                                   "batching")) is not None:
                            victim, batched = caught[0], caught[1]["job"]
                        victim.kill()
                        victim.wait()
                        if batched is not None and _not_done(server.url, batched):
                            landed += 1
                        live.remove(victim)
                        slot = victim.name.split(".")[0]
                        generation[slot] += 1
                        live.append(fleet.start(f"{slot}.{generation[slot]}", **options))
                    done_actions[action] += 1
                count = monitor.done(0.1)
                if count is not None:
                    bar.update(count - done)
                    done = count
            timed_out = done < jobs
            for entry in paused:
                entry.worker.resume()
                live.append(entry.worker)
            for worker in live:
                worker.terminate()
            exit_codes = {w.name: w.wait() for w in fleet.workers.values()}
        finally:
            bar.close()
            monitor.close()
            fleet.close()
        with db.connect(SCHEMA, url=server.url) as conn:
            verdict = dict(zip([c.name for c in conn.execute(_QUERIES["verdict"].sql).description],
                               conn.execute(_QUERIES["verdict"].sql).fetchone(), strict=True))
            attempts = conn.execute(_QUERIES["attempts"].sql).fetchall() if record else []
    logged = Counter(e["event"] for w in fleet.workers.values() for e in w.events)
    planned = {"kills": kills, "stops": stops, "restarts": restarts}
    carried_out = {"kills": done_actions["kill"], "stops": done_actions["stop"],
                   "restarts": done_actions["restart"]}
    if flush_kills:
        planned["flush_kills"] = flush_kills
        carried_out["flush_kills"] = done_actions["flushkill"]
    result = {
        "seed": seed, "jobs": jobs, "workers": workers, "concurrency": concurrency,
        "lease_s": lease, "poll_s": poll, "restart_mode": restart_mode,
        "batch": batch, "batch_wait_s": batch_wait,
        "planned": planned, "carried_out": carried_out, "flush_kills_landed": landed,
        "worker_processes": len(fleet.workers),
        "exit_codes": exit_codes,
        "duration_s": round(time.monotonic() - started, 2),
        "time_limit_s": time_limit, "timed_out": timed_out,
        "verdict": verdict,
        "logged": {k: logged[k] for k in ("claimed", "batching", "finished", "retrying",
                                          "rejected", "lost", "handed-back", "reconnecting",
                                          "reconnected")},
    }
    if record:
        result["timeline"] = _timeline(since, attempts, fleet.marks, restarts_at)
    return result


def _timeline(since: datetime, attempts: list[tuple], marks: list[dict[str, Any]],
              restarts: list[tuple[datetime, datetime]]) -> dict[str, Any]:
    """The recorded run (see `run`), every moment in seconds since `since`."""

    def seconds(moment: datetime | None) -> float | None:
        return None if moment is None else round((moment - since).total_seconds(), 4)

    return {
        "since": since.isoformat(),
        "attempts": [{"job": job, "attempt": attempt, "worker": worker,
                      "start": seconds(started), "end": seconds(finished), "outcome": outcome,
                      "rejected": rejected, "rejected_at": seconds(rejected_at)}
                     for job, attempt, worker, started, finished, outcome, rejected, rejected_at
                     in attempts],
        "signals": [{"worker": m["worker"], "signal": m["signal"], "at": seconds(m["at"])}
                    for m in marks if m["signal"] in FAULT_SIGNALS],
        "restarts": [[seconds(a), seconds(b)] for a, b in restarts],
    }


def _submit(conn: psycopg.Connection, n: int, work: float) -> int:
    # Many attempts allowed: a job may be hit by several kills; it must still end done.
    return effects.submit(conn, f"charge-{n}", tenant_id=1 + n % 3, max_attempts=100,
                           amount=n, work=work)


class _Pause:
    """A paused worker: resumed from `earliest` on, once the job it was paused in (from its
    `started` event, if one came) has a later attempt, and at `latest` in any case."""

    def __init__(self, worker: WorkerProcess, earliest: float, latest: float,
                 started: dict[str, Any] | None) -> None:
        self.worker, self.earliest, self.latest = worker, earliest, latest
        self.job = None if started is None else (started["job"], started["attempt"])

    def due(self, now: float, url: str) -> bool:
        if now < self.earliest:
            return False
        return self.job is None or now >= self.latest or _taken_over(url, *self.job)


def _taken_over(url: str, job_id: int, attempt: int) -> bool:
    try:
        with db.connect(SCHEMA, url=url) as conn:
            return conn.execute(_QUERIES["taken_over"].sql,
                                {"job_id": job_id, "attempt": attempt}).fetchone()[0]
    except CONNECTION_ERRORS:  # the server is restarting: look again on the next round
        return False


def _at_started(worker: WorkerProcess, wait: float) -> dict[str, Any] | None:
    """Wait (up to `wait` s) for the worker's next 'started' and return it; None on a
    timeout, after which the caller acts anyway (an idle worker can be killed as well)."""
    with contextlib.suppress(TimeoutError):
        return worker.wait_for("started", wait, after=len(worker.events))
    return None


def _freeze_at(fleet: Fleet, live: list[WorkerProcess], url: str, wait: float, event: str,
               where: Callable[[dict[str, Any]], bool] | None = None,
               tries: int = 20) -> tuple[WorkerProcess, dict[str, Any]] | None:
    """Wait for the next `event` line (that `where` accepts) of any live worker, freeze that
    worker (SIGSTOP) and look: if the line's job is still not done, return (worker, line),
    the worker still frozen. Else let it go on (SIGCONT) and wait for the next such line.
    None after `tries` lines, or when no worker wrote one for `wait` seconds.

    'batching' (a result waits for the flush): the frozen worker can send no flush, which a
    kill then loses. 'started' of a long job: the frozen worker's report of it comes late."""
    seen = {w.name: len(w.events) for w in live}
    for _ in range(tries):
        deadline = time.monotonic() + wait
        found = None
        with fleet.changed:
            while found is None:
                for w in live:
                    hits = w.find(event, after=seen[w.name], where=where)
                    if hits:
                        found = (w, hits[0])
                        break
                if found is None and not fleet.changed.wait(max(0.0, deadline - time.monotonic())):
                    return None
        worker, line = found
        worker.pause()
        if _not_done(url, line["job"]):
            return worker, line
        worker.resume()  # its job is done already: wait for the next line
        seen = {w.name: len(w.events) for w in live}
    return None


def _not_done(url: str, job_id: int) -> bool:
    """After a flush kill: the job's result was not written (the kill hit the window)."""
    try:
        with db.connect(SCHEMA, url=url) as conn:
            return conn.execute(_QUERIES["not_done"].sql, {"job_id": job_id}).fetchone()[0]
    except CONNECTION_ERRORS:  # the server is restarting: do not count this one
        return False


def failures(result: dict[str, Any]) -> list[str]:
    """Every invariant the run broke, one line each (empty: all held). Each names the seed."""
    v, seed = result["verdict"], result["seed"]
    wanted = {"lost": 0, "duplicates": 0, "stuck_running": 0, "open_attempts": 0,
              "not_one_finished_attempt": 0, "results_not_of_their_attempt": 0,
              "outputs_not_of_their_attempt": 0, "not_one_charge": 0, "done": result["jobs"]}
    found = [f"{key} = {v[key]}, expected {want}" for key, want in wanted.items() if v[key] != want]
    if result.get("timed_out"):
        found.append(f"the run reached its time limit ({result['time_limit_s']:g} s) "
                     f"before every job was done")
    if result["carried_out"] != result["planned"]:
        found.append(f"carried out {result['carried_out']}, planned {result['planned']}")
    if result["planned"]["stops"] and not v["stale_reports_rejected"]:
        found.append("workers were paused past their lease, yet no stale report was rejected")
    if result["planned"].get("flush_kills") and not result.get("flush_kills_landed"):
        found.append("no kill landed between a handler's return and the flush")
    crashed = {n: c for n, c in result["exit_codes"].items() if c not in (0, -9)}
    if crashed:
        found.append(f"workers exited on their own or uncleanly: {crashed}")
    return [f"{line} (reproduce with seed={seed})" for line in found]


def _bar(enabled: bool, total: int) -> Any:
    if enabled:
        from tqdm import tqdm  # the plain bar, on stderr (no widget in saved notebooks)

        return tqdm(total=total, desc="jobs done", unit="job")
    return _NoBar()


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass
