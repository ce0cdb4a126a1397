"""Chaos for the JetStream worker: `cachequeue worker --broker nats` processes killed, paused
and respawned at random, the broker SIGKILLed and restarted; what survived.

`run(jobs=2000, workers=4, seed=7)` starts a private PostgreSQL and a private nats-server
(JetStream, file store; whatever DATABASE_URL and NATS_URL say), publishes `jobs` jobs with a
Nats-Msg-Id each (one in five is long: 0.3-0.6 s of work), and starts `workers` worker
processes (course.procs.fleet, `--broker nats`, lease 1 s, concurrency 2). As results come
in it carries out a plan drawn from `seed`: SIGKILL a worker the moment it logs a job
started (a fresh one takes its place), SIGSTOP one in the middle of a long job for longer
than its lease (its delivery is redelivered meanwhile; resumed, its late result is refused
by the fence unless it is still the newest), SIGKILL the broker and start it again (same
port, same store). When every job has a result (or `time_limit` passed) it stops the
workers with SIGTERM and returns a JSON-able dict: the plan carried out, exit statuses, what
the logs counted, and the verdict from the tables (bench/broker_chaos.sql): lost (jobs with
no result), duplicates (results beyond one per job), dead letters. `failures(result)` lists
every broken invariant with the seed. `bench/chaos.py --broker nats` runs it.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from cachequeue import db, embedded, embedded_nats, sqlfile
from cachequeue.broker import Publisher
from cachequeue.checks import check_int, check_seconds
from cachequeue.course.procs.chaos import patience
from cachequeue.course.procs.fleet import Fleet

__all__ = ["HANDLERS", "failures", "run"]

HERE = Path(__file__).resolve().parent
QUERIES = sqlfile.parse((HERE / "broker_chaos.sql").read_text(encoding="utf-8"),
                        "bench/broker_chaos.sql")
SCHEMA = "chaos_nats"
LONG, SHORT = (0.3, 0.6), (0.005, 0.04)


def work(payload: dict[str, Any]) -> dict[str, int]:
    """The chaos job: `work` seconds of (sleeping) work; the result names the job."""
    time.sleep(payload["work"])
    return {"n": payload["n"]}


HANDLERS = {"work": work}  # --handlers broker_chaos:HANDLERS, with bench/ on PYTHONPATH


def _plan(rng: random.Random, jobs: int, kills: int, stops: int, restarts: int) -> list:
    actions = ["kill"] * kills + ["stop"] * stops + ["restart"] * restarts
    return sorted((rng.randint(jobs // 20, jobs * 17 // 20), a) for a in actions)


def _done(url: str) -> int | None:
    try:
        with db.connect(SCHEMA, url=url) as conn:
            return conn.execute(QUERIES["done_count"].sql).fetchone()[0]
    except Exception:  # the tables are not there yet
        return None


def run(*, jobs: int = 2000, workers: int = 4, seed: int = 0, kills: int = 12, stops: int = 8,
        restarts: int = 1, concurrency: int = 2, lease: float = 1.0,
        time_limit: float = 600.0) -> dict[str, Any]:
    """Run the chaos experiment (see the module docstring) and return its result."""
    check_int(jobs, "jobs", minimum=20)
    check_int(workers, "workers", minimum=2)
    check_seconds(time_limit, "time_limit")
    rng = random.Random(seed)
    plan = _plan(rng, jobs, kills, stops, restarts)
    wait = patience(lease, 0.1)
    options = {"broker": "nats", "lease": lease, "concurrency": concurrency,
               "shutdown_timeout": 5, "max_attempts": 50}
    done_actions: Counter = Counter()
    started = time.monotonic()
    saved = {k: os.environ.get(k) for k in ("NATS_URL", "PYTHONPATH")}
    with embedded.Server.private() as pg, embedded_nats.Server.private() as broker:
        os.environ["NATS_URL"] = broker.url  # the workers' broker (Fleet passes os.environ on)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), saved["PYTHONPATH"]]))
        fleet = Fleet(SCHEMA, url=pg.url, handlers="broker_chaos:HANDLERS")
        try:
            with db.connect(url=pg.url) as conn:
                conn.execute(f"CREATE SCHEMA {SCHEMA}")
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
            live = [fleet.start(f"w{slot}", **options) for slot in range(1, workers + 1)]
            paused: list[tuple[Any, float]] = []
            done = 0
            while ((done < jobs or (plan and plan[0][0] <= done))
                   and time.monotonic() - started < time_limit):
                now = time.monotonic()
                for entry in [p for p in paused if p[1] <= now]:
                    entry[0].resume()
                    paused.remove(entry)
                    live.append(entry[0])
                if plan and done >= plan[0][0] and (plan[0][1] != "stop" or len(live) > 1):
                    action = plan.pop(0)[1]
                    if action == "restart":
                        broker.kill()
                        broker.start()
                    else:
                        victim = rng.choice(live)
                        chosen = long_jobs if action == "stop" else None
                        with contextlib.suppress(TimeoutError):  # none in time: act anyway
                            victim.wait_for("started", wait, after=len(victim.events),
                                            where=lambda e, among=chosen: among is None
                                            or e["seq"] in among)
                        if action == "kill":
                            victim.kill()
                            victim.wait()
                            live.remove(victim)
                            slot = victim.name.split(".")[0]
                            generation[slot] += 1
                            live.append(fleet.start(f"{slot}.{generation[slot]}", **options))
                        else:
                            victim.pause()
                            live.remove(victim)
                            paused.append((victim, time.monotonic() + lease + rng.uniform(1.0, 2.0)))
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
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        with db.connect(SCHEMA, url=pg.url) as conn:
            cur = conn.execute(QUERIES["verdict"].sql)
            verdict = dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))
        with Publisher(SCHEMA, url=broker.url) as pub:
            left_in_stream = pub.stream_state()["messages"]
    verdict["lost"] = jobs - verdict["jobs_with_result"] - verdict["dead_letters"]
    verdict["left_in_stream"] = left_in_stream
    logged = Counter(e["event"] for w in fleet.workers.values() for e in w.events)
    return {
        "broker": "nats", "seed": seed, "jobs": jobs, "workers": workers,
        "concurrency": concurrency, "lease_s": lease,
        "planned": {"kills": kills, "stops": stops, "restarts": restarts},
        "carried_out": {"kills": done_actions["kill"], "stops": done_actions["stop"],
                        "restarts": done_actions["restart"]},
        "worker_processes": len(fleet.workers), "exit_codes": exit_codes,
        "duration_s": round(time.monotonic() - started, 2), "time_limit_s": time_limit,
        "timed_out": timed_out, "verdict": verdict,
        "logged": {k: logged[k] for k in ("started", "finished", "retrying", "stale", "redone",
                                          "handed-back", "reconnecting", "reconnected",
                                          "fetch-failed", "ack-failed", "dead")},
    }


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
