"""Verifying schedules (queue.schedules): each fire time enqueued once, none beyond the
missed-fire policy, none missed that a scheduler's pass should have enqueued.

The history is the list of scheduler passes that completed, each as `Pass(planned,
enqueued)`: the database clock when it planned and when its enqueue statement ran (a pass
that was paused between the two has planned < enqueued). The snapshot is the tables at
the end (`snapshot(conn)`). `check(snapshot, passes)` returns a `ScheduleViolation` per
problem, each with a witness:

- `schedule-duplicate`: a (schedule, fire time) with more than one fire row, or a fire's
  job enqueued twice (two jobs with one idempotency key, two fires naming one job);
- `schedule-beyond-policy`: a fire row enqueued outside its window [fire time, window end)
  (the policy had given it up, or it had not come), or at or before the schedule's start;
- `schedule-missed`: a fire time that some completed pass should have enqueued (it was
  among the pass's candidates and its window was still open when the pass enqueued) but
  that has no fire row.
- `schedule-orphan`: a fire row whose job is not in the queue.

A mutant shows the unique key is what prevents the first: `no-fire-key` installs
`schedule_fires` without its primary key and enqueues without the jobs' idempotency key
(`install(conn, "no-fire-key")`, `use("no-fire-key")` in the scheduler's own process);
racing schedulers then enqueue one fire time several times, and `check` says so
(tests/chaos/test_schedules_chaos.py).

This module imports the ground floor and `queue` only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from .. import sqlfile
from ..checks import check_choice
from ..queue import schedules
from .checks import Violation

__all__ = ["SCHEDULE_CHECKS", "SCHEDULE_VARIANTS", "Pass", "ScheduleViolation", "check",
           "install", "mutant_sql", "snapshot", "use"]

SCHEDULE_CHECKS = {"schedule-duplicate": 11, "schedule-beyond-policy": 11,
                   "schedule-missed": 11, "schedule-orphan": 11}
SCHEDULE_VARIANTS = ("real", "no-fire-key")

_REAL = schedules.query
_SNAPSHOT = sqlfile.load(__package__, "schedules.sql")
# The mutant is the real statements with the unique key cut out, word for word.
_CUTS = {
    "install": [(",\n    PRIMARY KEY (schedule_id, fire_at)\n", "\n")],
    "enqueue": [("ON CONFLICT (schedule_id, fire_at) DO NOTHING", "ON CONFLICT DO NOTHING"),
                ("           'schedule:' || s.id || ':'\n"
                 "               || to_char(f.fire_at AT TIME ZONE 'UTC', "
                 "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),\n", "           NULL,\n")],
}


class ScheduleViolation(Violation):
    """A Violation of the schedule checks (numbered 11 beside the job checks)."""

    @property
    def number(self) -> int:
        return SCHEDULE_CHECKS[self.check]


@dataclass(frozen=True)
class Pass:
    """One completed scheduler pass: the clock when it planned and when it enqueued."""

    scheduler: str
    planned: datetime
    enqueued: datetime


def mutant_sql(name: str) -> str:
    """Statement `name` ("install" or "enqueue") of the no-fire-key mutant: the real one
    without the unique key. A cut that is not in the real statement exactly once is an
    error (the mutant would no longer be the real statement minus the key)."""
    cuts = _CUTS[name]
    sql = _REAL(name).sql
    for old, new in cuts:
        if sql.count(old) != 1:
            raise RuntimeError(f"no-fire-key: {old.strip()!r} is not once in {name} of "
                               "queue/sql/schedules.sql; update verify.schedules to match it")
        sql = sql.replace(old, new)
    return sql


class _Mutant:
    def __call__(self, name: str) -> sqlfile.Query:
        if name in _CUTS:
            return sqlfile.Query(name, _REAL(name).purpose, mutant_sql(name))
        return _REAL(name)


def install(conn: psycopg.Connection, variant: str = "real") -> None:
    """The schedules' tables, as the real queue makes them or as the mutant does."""
    check_choice(variant, "variant", SCHEDULE_VARIANTS)
    if variant == "real":
        schedules.install(conn)
        return
    with conn.transaction():
        conn.execute(mutant_sql("install"))


def use(variant: str) -> None:
    """Make `queue.schedules` of THIS process run `variant`'s statements: only ever in a
    verify run's own scheduler processes."""
    check_choice(variant, "variant", SCHEDULE_VARIANTS)
    schedules.query = _REAL if variant == "real" else _Mutant()


def snapshot(conn: psycopg.Connection) -> dict[str, list[dict[str, Any]]]:
    """The schedules, every fire row and the jobs' ids and keys, for `check`."""
    with conn.cursor(row_factory=dict_row) as cur:
        return {name: cur.execute(_SNAPSHOT[name].sql).fetchall()
                for name in ("schedules", "fires", "jobs")}


def check(snap: dict[str, list[dict[str, Any]]], passes: list[Pass]) -> list[ScheduleViolation]:
    """Every schedule violation of the run, each with its witness rows."""
    found: list[ScheduleViolation] = []
    by_id = {s["id"]: s for s in snap["schedules"]}
    fires: dict[tuple[int, datetime], list[dict]] = defaultdict(list)
    for row in snap["fires"]:
        fires[(row["schedule_id"], row["fire_at"])].append(row)
    job_ids = {j["id"] for j in snap["jobs"]}
    for (sid, fire_at), rows in fires.items():
        if len(rows) > 1:
            found.append(ScheduleViolation(
                "schedule-duplicate", rows[0]["job_id"],
                f"{by_id[sid]['name']} fire time {fire_at.isoformat()} was enqueued "
                f"{len(rows)} times", [{"row": "schedule_fires"} | r for r in rows]))
        s = by_id[sid]
        end = schedules.window_end(s["cron"], s["timezone"], fire_at, s["catch_up"])
        for r in rows:
            if not (fire_at <= r["enqueued_at"] < end) or fire_at <= s["starts_at"]:
                found.append(ScheduleViolation(
                    "schedule-beyond-policy", r["job_id"],
                    f"{s['name']} fire time {fire_at.isoformat()} was enqueued at "
                    f"{r['enqueued_at'].isoformat()}, outside its window "
                    f"[{fire_at.isoformat()}, {end.isoformat()}) (catch_up={s['catch_up']})",
                    [{"row": "schedule_fires"} | r, {"row": "schedules"} | s]))
            if r["job_id"] not in job_ids:
                found.append(ScheduleViolation(
                    "schedule-orphan", r["job_id"],
                    f"{s['name']} fire time {fire_at.isoformat()} names job {r['job_id']}, "
                    "which is not in the queue", [{"row": "schedule_fires"} | r]))
    for key, n in Counter(j["idempotency_key"] for j in snap["jobs"]
                          if j["idempotency_key"]).items():
        if n > 1:
            found.append(ScheduleViolation(
                "schedule-duplicate", None, f"{n} jobs carry the key {key!r}",
                [{"row": "jobs"} | j for j in snap["jobs"] if j["idempotency_key"] == key]))
    for job_id, n in Counter(r["job_id"] for r in snap["fires"]).items():
        if n > 1:
            found.append(ScheduleViolation(
                "schedule-duplicate", job_id, f"{n} fire rows name job {job_id}",
                [{"row": "schedule_fires"} | r for r in snap["fires"] if r["job_id"] == job_id]))
    owed: dict[tuple[int, datetime], Pass] = {}
    for p in passes:
        for s in snap["schedules"]:
            for t in schedules.fire_times(s["cron"], s["timezone"], s["starts_at"], p.planned,
                                          limit=100_000)[-(s["catch_up"] + 1):]:
                if p.enqueued < schedules.window_end(s["cron"], s["timezone"], t, s["catch_up"]):
                    owed.setdefault((s["id"], t), p)
    for (sid, t), p in sorted(owed.items(), key=lambda kv: kv[0]):
        if (sid, t) not in fires:
            found.append(ScheduleViolation(
                "schedule-missed", None,
                f"{by_id[sid]['name']} fire time {t.isoformat()} was never enqueued, though "
                f"{p.scheduler}'s pass (planned {p.planned.isoformat()}, enqueued "
                f"{p.enqueued.isoformat()}) was within its window",
                [{"row": "pass"} | vars(p), {"row": "schedules"} | by_id[sid]]))
    return found
