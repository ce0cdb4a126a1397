"""Chaos for the JetStream worker: `cachequeue worker --broker nats` processes killed, paused
and respawned at random, the broker SIGKILLed and restarted; what survived.

`run(jobs=2000, workers=4, seed=7)` starts a private PostgreSQL and a private nats-server
(JetStream, file store; whatever DATABASE_URL and NATS_URL say), publishes `jobs` jobs with a
Nats-Msg-Id each (one in five is long: 0.3-0.6 s of work), and starts `workers` worker
processes (course.procs.fleet, `--broker nats`, lease 1 s, concurrency 2). As results come
in it carries out a plan drawn from `seed`: SIGKILL a worker the moment it logs a job
started (a fresh one takes its place), SIGSTOP a worker inside a long job (one running one
already, else the first to start one) for longer than its lease (its delivery is redelivered
meanwhile; resumed, its late result is refused by the fence), SIGKILL the broker and start
it again (same port, same store). When every job has a result (or `time_limit` passed) it
stops the workers with SIGTERM and returns a JSON-able dict: the plan carried out, exit
statuses, what the logs counted, and the verdict from the tables (`sql/brokerchaos.sql`):
lost (jobs with no result), duplicates (results beyond one per job), dead letters.
`failures(result)` lists every broken invariant with the seed; `counts(result)` is the
short table chapter 13 shows.

Chapter 13 runs a small one; `bench/chaos.py --broker nats` the full size, and
tests/chaos/test_broker_chaos.py a small one in every `make test`. Its counterpart for the
PostgreSQL queue is `course.procs.chaos` (chapter 06).
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from ... import db, embedded, embedded_nats, sqlfile
from ...broker import Publisher, fence
from ...checks import check_int, check_seconds
from .chaos import patience
from .fleet import Fleet, WorkerProcess

__all__ = ["HANDLERS", "counts", "failures", "run", "work"]

_QUERIES = sqlfile.load(__package__, "brokerchaos.sql")
SCHEMA = "chaos_nats"
HANDLERS_SPEC = f"{__name__}:HANDLERS"
LONG, SHORT = (0.3, 0.6), (0.005, 0.04)
_RECORDED = ("started", "finished", "stale", "redone", "retrying", "dead", "handed-back")


def work(payload: dict[str, Any]) -> dict[str, int]:
    """The chaos job: `work` seconds of (sleeping) work; the result names the job."""
    time.sleep(payload["work"])
    return {"n": payload["n"]}


HANDLERS = {"work": work}
"""`cachequeue worker --handlers cachequeue.course.procs.brokerchaos:HANDLERS`."""


def _plan(rng: random.Random, jobs: int, kills: int, stops: int,
          restarts: int) -> tuple[list, list]:
    """(jobs done, action) in order, and the pauses' milestones in jobs *started*. Kills and
    restarts land between 5% and 85% of the jobs done; pauses before half the jobs started,
    while plenty of long jobs are still to start (a pause waits for a worker inside one:
    late in a run, none may be left). Pauses count starts, not results: on two loaded cores
    the results lag far behind the starts, and a pause planned at half the jobs done found
    no long job left."""
    until = {"kill": jobs * 17 // 20, "stop": jobs // 2, "restart": jobs * 17 // 20}
    actions = ["kill"] * kills + ["stop"] * stops + ["restart"] * restarts
    drawn = sorted((rng.randint(jobs // 20, until[a]), a) for a in actions)
    return [d for d in drawn if d[1] != "stop"], [at for at, a in drawn if a == "stop"]


def _done(url: str) -> int | None:
    try:
        with db.connect(SCHEMA, url=url) as conn:
            return conn.execute(_QUERIES["done_count"].sql).fetchone()[0]
    except Exception:  # the server is busy or the tables are not there yet: look again
        return None


_OVER = ("finished", "stale", "retrying", "dead", "handed-back")  # a job's run has ended


def _running_long(worker: WorkerProcess, long_jobs: set[int]) -> bool:
    """Whether the worker's log shows a long job started and not yet over."""
    running: set[int] = set()
    for e in list(worker.events):
        if e["event"] == "started" and e.get("seq") in long_jobs:
            running.add(e["seq"])
        elif e["event"] in _OVER:
            running.discard(e.get("seq"))
    return bool(running)


def _in_a_long_job(fleet: Fleet, live: list[WorkerProcess], long_jobs: set[int],
                   wait: float) -> WorkerProcess | None:
    """A live worker running a long job now (by its log), else the first to log a 'started'
    of one from now on (within `wait` seconds); None if none did."""
    seen = {w.name: len(w.events) for w in live}
    deadline = time.monotonic() + wait
    with fleet.changed:
        for w in live:
            if _running_long(w, long_jobs):
                return w
        while True:
            for w in live:
                if w.find("started", after=seen[w.name], where=lambda e: e["seq"] in long_jobs):
                    return w
            if not fleet.changed.wait(max(0.0, deadline - time.monotonic())):
                return None


def run(*, jobs: int = 2000, workers: int = 4, seed: int = 0, kills: int = 12, stops: int = 8,
        restarts: int = 1, concurrency: int = 2, lease: float = 1.0,
        time_limit: float = 600.0, record: bool = False) -> dict[str, Any]:
    """Run the chaos experiment (see the module docstring) and return its result; with
    `record`, also its `timeline`: the workers' delivery events and the signals and broker
    restarts, with their times (what `views.redelivery.chaos_chart` draws)."""
    check_int(jobs, "jobs", minimum=20)
    check_int(workers, "workers", minimum=2)
    check_int(kills, "kills", minimum=0)
    check_int(stops, "stops", minimum=0)
    check_int(restarts, "restarts", minimum=0)
    check_seconds(time_limit, "time_limit")
    rng = random.Random(seed)
    plan, stops_at = _plan(rng, jobs, kills, stops, restarts)
    wait = patience(lease, 0.1)
    options = {"broker": "nats", "lease": lease, "concurrency": concurrency,
               "shutdown_timeout": 5, "max_attempts": 50}
    done_actions: Counter = Counter()
    paused_in_a_job = 0
    started = time.monotonic()
    saved = os.environ.get("NATS_URL")
    with embedded.Server.private() as pg, embedded_nats.Server.private() as broker:
        os.environ["NATS_URL"] = broker.url  # the workers' broker (Fleet passes os.environ on)
        fleet = Fleet(SCHEMA, url=pg.url, handlers=HANDLERS_SPEC)
        try:
            with db.connect(url=pg.url) as conn:
                db.reset_schema(conn, SCHEMA, fence.install)
            long_jobs: set[int] = set()
            with Publisher(SCHEMA, url=broker.url, ack_wait=lease,
                           max_deliver=options["max_attempts"]) as pub:
                for n in range(jobs):
                    slow = rng.random() < 0.2
                    seq = pub.submit("work", {"n": n, "work": rng.uniform(*(LONG if slow else SHORT))},
                                     msg_id=f"chaos-{n}").seq
                    if slow:
                        long_jobs.add(seq)
            generation: Counter = Counter()
            restarted: list[tuple[datetime, datetime]] = []
            live = [fleet.start(f"w{slot}", **options) for slot in range(1, workers + 1)]
            paused: list[tuple[WorkerProcess, float]] = []
            done = 0
            while ((done < jobs or (plan and plan[0][0] <= done) or stops_at)
                   and time.monotonic() - started < time_limit):
                now = time.monotonic()
                for entry in [p for p in paused if p[1] <= now]:
                    entry[0].resume()
                    paused.remove(entry)
                    live.append(entry[0])
                if stops_at and len(live) > 1 and len(fleet.find("started")) >= stops_at[0]:
                    stops_at.pop(0)
                    # Frozen inside a long job, so that its result comes after the lease
                    # (any worker, if no long job started for a while).
                    victim = _in_a_long_job(fleet, live, long_jobs, wait)
                    if victim is None:
                        victim = rng.choice(live)
                    else:
                        paused_in_a_job += 1
                    victim.pause()
                    live.remove(victim)
                    paused.append((victim, time.monotonic() + lease + rng.uniform(1.0, 2.0)))
                    done_actions["stop"] += 1
                if plan and done >= plan[0][0]:
                    action = plan.pop(0)[1]
                    if action == "restart":
                        killed_at = datetime.now(UTC)
                        broker.kill()
                        broker.start()
                        restarted.append((killed_at, datetime.now(UTC)))
                    elif action == "kill":
                        victim = rng.choice(live)
                        with contextlib.suppress(TimeoutError):  # none in time: act anyway
                            victim.wait_for("started", wait, after=len(victim.events))
                        victim.kill()
                        victim.wait()
                        live.remove(victim)
                        slot = victim.name.split(".")[0]
                        generation[slot] += 1
                        live.append(fleet.start(f"{slot}.{generation[slot]}", **options))
                    done_actions[action] += 1
                count = _done(pg.url)
                done = done if count is None else count
                time.sleep(0.05)
            timed_out = done < jobs
            for victim, _ in paused:
                victim.resume()
                live.append(victim)
            for worker in live:
                worker.terminate()
            exit_codes = {w.name: w.wait() for w in fleet.workers.values()}
        finally:
            fleet.close()
            if saved is None:
                os.environ.pop("NATS_URL", None)
            else:
                os.environ["NATS_URL"] = saved
        with db.connect(SCHEMA, url=pg.url) as conn:
            cur = conn.execute(_QUERIES["verdict"].sql)
            verdict = dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))
        with Publisher(SCHEMA, url=broker.url) as pub:
            left_in_stream = pub.stream_state()["messages"]
    verdict["lost"] = jobs - verdict["jobs_with_result"] - verdict["dead_letters"]
    verdict["left_in_stream"] = left_in_stream
    events = [e for w in fleet.workers.values() for e in w.events]
    logged = Counter(e["event"] for e in events)
    refused = sum(e["event"] == "stale" and e.get("refused") == "result" for e in events)
    result = {
        "broker": "nats", "seed": seed, "jobs": jobs, "workers": workers,
        "concurrency": concurrency, "lease_s": lease,
        "planned": {"kills": kills, "stops": stops, "restarts": restarts},
        "carried_out": {"kills": done_actions["kill"], "stops": done_actions["stop"],
                        "restarts": done_actions["restart"]},
        "paused_in_a_job": paused_in_a_job, "stale_results_refused": refused,
        "worker_processes": len(fleet.workers), "exit_codes": exit_codes,
        "duration_s": round(time.monotonic() - started, 2), "time_limit_s": time_limit,
        "timed_out": timed_out, "verdict": verdict,
        "logged": {k: logged[k] for k in ("started", "finished", "retrying", "stale", "redone",
                                          "handed-back", "reconnecting", "reconnected",
                                          "fetch-failed", "ack-failed", "dead")},
    }
    if record:
        result["timeline"] = {
            "events": [{k: e.get(k) for k in ("time", "worker", "event", "seq", "delivery",
                                               "refused")}
                       for e in events if e["event"] in _RECORDED],
            "signals": [{"at": m["at"].isoformat(), "worker": m["worker"], "signal": m["signal"]}
                        for m in fleet.marks],
            "restarts": [[a.isoformat(), b.isoformat()] for a, b in restarted]}
    return result


def failures(result: dict[str, Any]) -> list[str]:
    """Every broken invariant of a run, each naming the seed that reproduces it."""
    seed, verdict, problems = result["seed"], result["verdict"], []
    for key in ("lost", "duplicates", "dead_letters", "results_not_from_the_newest_delivery",
                "left_in_stream"):
        if verdict[key]:
            problems.append(f"{key}: {verdict[key]} (seed {seed})")
    if result["timed_out"]:
        problems.append(f"timed out after {result['time_limit_s']} s (seed {seed})")
    if result["carried_out"] != result["planned"]:
        problems.append(f"carried out {result['carried_out']}, planned {result['planned']} "
                        f"(seed {seed})")
    return problems


def counts(result: dict[str, Any]) -> dict[str, int]:
    """The run in one row: jobs submitted and processed (with a result), lost, doubled
    (results beyond one per job), results of a stale delivery that the fence refused (a
    worker that finished after its job had been delivered again), and the faults carried
    out (kills, pauses, broker restarts)."""
    verdict, done = result["verdict"], result["carried_out"]
    return {"submitted": result["jobs"], "processed": verdict["jobs_with_result"],
            "lost": verdict["lost"], "doubled": verdict["duplicates"],
            "stale_refused": result["stale_results_refused"], "kills": done["kills"],
            "pauses": done["stops"], "restarts": done["restarts"]}
