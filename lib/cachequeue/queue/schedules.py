"""Schedules that fire once: periodic jobs that any number of schedulers enqueue, each fire
time exactly once.

    schedules.install(conn)
    schedules.create(conn, "nightly-report", "30 2 * * *", timezone="Europe/Berlin",
                     kind="report", payload={"scope": "all"}, catch_up=0)
    schedules.tick(conn, scheduler="s1")      # enqueue what is due now; any process, any time
    schedules.fires(conn, "nightly-report")   # what fired: fire time, job id, who, when

**Fire times.** A schedule is a cron expression (five fields: minute, hour, day of month,
month, day of week) read in an IANA time zone (`timezone`, default "UTC"). The cron
arithmetic is cronsim's (https://github.com/cuu508/cronsim), not ours: a small, typed,
maintained parser written for healthchecks.io that matches Debian's cron, DST included.
Chosen over croniter: croniter's PyPI page declared it abandoned in 2025 until pallets-eco
took it over, and it has a far larger surface (seconds, hashed and random fields, six and
seven field forms) than we need; we need only the five fields and a stated DST rule, and a
smaller library is less to trust. Only fire times after the schedule's creation (database clock) fire.

**Daylight saving time** (cronsim's rule, which is Debian cron's), e.g. Europe/Berlin:
- spring forward (the clock jumps 02:00 -> 03:00): a fixed-time entry in the hour that does
  not exist ("30 2 * * *") fires once, right after the jump, at 03:00 local (01:00 UTC);
- fall back (03:00 -> 02:00 again): a fixed-time entry in the hour that happens twice
  ("30 2 * * *") fires once, at its first occurrence (02:30 +02:00, 00:30 UTC);
- an entry with a wildcard or a step in the minute or hour ("*/30 * * * *") fires at every
  real instant that matches: 02:00 and 02:30 twice on the fall-back day, none of the
  missing hour on the spring-forward day.
Fire times are stored in UTC (timestamptz), so the two 02:30s of a fall-back night are two
distinct keys. tests/unit/queue/test_schedules_times.py pins all of it.

**Exactly once.** A fire time is enqueued by one statement (`sql/schedules.sql`, enqueue):
it inserts the fire's row into `schedule_fires` with ON CONFLICT DO NOTHING on the primary
key (schedule, fire time), and the job from the rows that were inserted, in the same
statement; the job's idempotency key "schedule:<id>:<fire time>" is a second guard. However
many schedulers tick at once, one inserts and the others do nothing; no leader is elected,
so there is none to pause. A scheduler killed before its statement commits wrote nothing.

**The missed-fire policy** (`catch_up`, 0 to MAX_CATCH_UP). Fire time t may be enqueued
only while the database clock lies in [t, the (catch_up + 1)-th fire time after t): the
statement checks that window with the clock at the moment it inserts, so a scheduler that
was paused (SIGSTOP) after planning cannot enqueue what the policy has since given up.
- `catch_up=0`, skip: after all schedulers were down, only the LATEST fire time that came
  is enqueued (once); the older ones are skipped, never enqueued later.
- `catch_up=n`: the latest fire time and up to n before it are enqueued, oldest first;
  older ones are skipped. n is bounded (MAX_CATCH_UP) so an outage of a month of a
  per-minute schedule enqueues at most 101 jobs, not 43,200.
A scheduler that ticks at least once per fire interval misses nothing.

`tick` = `plan` (read the clock and the schedules, compute each schedule's candidates and
their windows in Python) + `enqueue` (one statement). They are public so a test can stop a
scheduler between the two, which is where a pause or a kill hurts.

Tables are installed by `install(conn)` (after `queue.install`). Every function refuses
bad input with TypeError / ValueError / UnknownKind / PayloadTooLarge before writing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import psycopg
from cronsim import CronSim, CronSimError
from psycopg.rows import dict_row

from .. import sqlfile
from ..checks import check_instance, check_int, check_text
from ..errors import UnknownKind
from .limits import payload_json

__all__ = ["MAX_CATCH_UP", "MAX_CRON_CHARS", "MAX_NAME_CHARS", "MAX_SCHEDULER_CHARS",
           "MAX_SCHEDULES", "MAX_ZONE_CHARS", "Fire",
           "Plan", "Schedule", "create", "delete", "enqueue", "fire_times", "fires",
           "install", "list_schedules", "plan", "query", "tick", "window_end"]

MAX_NAME_CHARS = 100  # a schedule's name
MAX_CRON_CHARS = 200  # a cron expression's text
MAX_ZONE_CHARS = 64  # an IANA zone name ("America/Argentina/ComodRivadavia" is 32)
MAX_CATCH_UP = 100  # missed fire times enqueued late, beyond the latest one
MAX_SCHEDULES = 1000  # schedules one tick reads
MAX_SCHEDULER_CHARS = 200  # a scheduler's name in schedule_fires

query = sqlfile.load(__package__, "schedules.sql")
"""The named statements of `sql/schedules.sql`: `query("enqueue").sql` to read or EXPLAIN."""


@dataclass(frozen=True)
class Schedule:
    """One row of `schedules`."""

    id: int
    name: str
    cron: str
    timezone: str
    tenant_id: int
    kind: str
    payload: dict
    catch_up: int
    max_attempts: int
    starts_at: datetime
    created_at: datetime

    @property
    def missed(self) -> str:
        """The missed-fire policy in words: "skip" or "catch up n"."""
        return "skip" if self.catch_up == 0 else f"catch up {self.catch_up}"


@dataclass(frozen=True)
class Fire:
    """A fire time that was enqueued: the schedule's name, the fire time (UTC), its job."""

    name: str
    fire_at: datetime
    job_id: int


@dataclass(frozen=True)
class Plan:
    """What one scheduler read and means to enqueue: the clock's reading `now`, and per
    candidate (schedule id, fire time, end of its window), fire times in UTC."""

    now: datetime
    candidates: tuple[tuple[int, datetime, datetime], ...]


# ------------------------------------------------------------------ checks (no database)


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def _zone(name: object) -> ZoneInfo:
    check_text(name, "timezone", limit=MAX_ZONE_CHARS)
    # Only names of the IANA database: ZoneInfo would also try odd keys as file paths.
    if name not in _zone_names():
        raise ValueError(f"timezone must be an IANA time zone name such as 'UTC' or "
                         f"'Europe/Berlin', got {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"timezone {name!r} could not be loaded") from None


def _cron(expr: object, zone: ZoneInfo) -> str:
    check_text(expr, "cron", limit=MAX_CRON_CHARS)
    if len(expr.split()) != 5:
        raise ValueError(f"cron must have five fields (minute hour day month weekday), "
                         f"got {expr!r}")
    try:
        it = CronSim(expr, datetime(2026, 1, 1, tzinfo=zone))
        next(it)
    except CronSimError as exc:
        raise ValueError(f"cron {expr!r} is not a valid expression: {exc}") from None
    except StopIteration:
        raise ValueError(f"cron {expr!r} never fires (no match within 50 years)") from None
    return expr


def _name(name: object) -> str:
    check_text(name, "name", limit=MAX_NAME_CHARS)
    if not name.isprintable() or name != name.strip():
        raise ValueError(f"name must be printable with no leading or trailing space, "
                         f"got {name!r}")
    return name


def _aware(when: object, name: str) -> datetime:
    check_instance(when, name, datetime)
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime (with a time zone), got {when!r}")
    return when


def fire_times(cron: str, timezone: str, after: datetime, until: datetime, *,
               limit: int = 1000) -> list[datetime]:
    """The fire times of `cron` in `timezone` in (after, until], in UTC, oldest first, at
    most `limit` of them (the earliest). Pure: no database. A ValueError names a bad
    expression or zone."""
    zone = _zone(timezone)
    cron = _cron(cron, zone)
    after, until = _aware(after, "after"), _aware(until, "until")
    limit = check_int(limit, "limit", minimum=1, maximum=100_000)
    found: list[datetime] = []
    for t in CronSim(cron, after.astimezone(zone)):
        t = t.astimezone(UTC)  # compare in UTC (see _latest)
        if t > until or len(found) == limit:
            break
        found.append(t)
    return found


def window_end(cron: str, timezone: str, fire_at: datetime, catch_up: int) -> datetime:
    """The end of fire time `fire_at`'s window under policy `catch_up`: the (catch_up+1)-th
    fire time after it (UTC). Until then it may still be enqueued; from then on, never."""
    zone = _zone(timezone)
    cron = _cron(cron, zone)
    catch_up = check_int(catch_up, "catch_up", minimum=0, maximum=MAX_CATCH_UP)
    it = CronSim(cron, _aware(fire_at, "fire_at").astimezone(zone))
    end = fire_at
    for _ in range(catch_up + 1):
        end = next(it, None)
        if end is None:  # no later fire time within 50 years: the window stays open
            return datetime.max.replace(tzinfo=UTC)
    return end.astimezone(UTC)


def _latest(cron: str, zone: ZoneInfo, now: datetime, after: datetime, count: int) -> list[datetime]:
    """Up to `count` latest fire times in (after, now], oldest first, in UTC.

    Forward iteration is the definition (it is what `window_end` and cronsim's DST rule
    use); reverse iteration only finds where to start it: `count` fire times back, less
    three hours, more than any DST shift, so that both directions agree at a transition."""
    # Compare in UTC only: two aware datetimes of the SAME zone compare by wall clock,
    # which orders the two 02:30s of a fall-back night wrongly.
    now, after = now.astimezone(UTC), after.astimezone(UTC)
    # cronsim's reverse iteration starts strictly before its start: a microsecond later
    # lets a fire time equal to `now` count as come.
    back = CronSim(cron, (now + timedelta(microseconds=1)).astimezone(zone), reverse=True)
    start = now
    for _ in range(count):
        earlier = next(back, None)
        if earlier is None or earlier.astimezone(UTC) <= after:
            break
        start = earlier.astimezone(UTC)
    start = max(start - timedelta(hours=3), after)
    found: list[datetime] = []
    for t in CronSim(cron, start.astimezone(zone)):
        t = t.astimezone(UTC)
        if t > now:
            break
        if t > after:
            found.append(t)
    return found[-count:]


# ------------------------------------------------------------------ the API


def install(conn: psycopg.Connection) -> None:
    """Create `schedules` and `schedule_fires` unless they exist (after `queue.install`:
    a schedule names one of the queue's job kinds)."""
    with conn.transaction():
        conn.execute(query("install").sql)


def create(conn: psycopg.Connection, name: str, cron: str, *, kind: str, payload: dict,
           timezone: str = "UTC", tenant_id: int = 0, catch_up: int = 0,
           max_attempts: int = 3) -> Schedule:
    """Create schedule `name`: its fire times are those of `cron` in `timezone` after now
    (database clock). `catch_up` is the missed-fire policy (0 = skip; see the module).
    A taken name, or MAX_SCHEDULES schedules already, is a ValueError, an unknown kind
    UnknownKind; nothing is written then."""
    zone = _zone(timezone)
    params = {"name": _name(name), "cron": _cron(cron, zone), "timezone": timezone,
              "tenant_id": check_int(tenant_id, "tenant_id"),
              "kind": check_text(kind, "kind"), "payload": payload_json(payload),
              "catch_up": check_int(catch_up, "catch_up", minimum=0, maximum=MAX_CATCH_UP),
              "max_attempts": check_int(max_attempts, "max_attempts", minimum=1,
                                        maximum=1000)}
    with conn.transaction():
        conn.execute(query("lock").sql)
        kind_known, existing = conn.execute(query("before_create").sql, params).fetchone()
        if not kind_known:
            raise UnknownKind(f"unknown job kind {kind!r}; known kinds are rows of job_kinds")
        if existing >= MAX_SCHEDULES:
            raise ValueError(f"there are {existing} schedules, the most one scheduler pass "
                             f"reads (MAX_SCHEDULES); delete one first")
        row = conn.execute(query("create").sql, params).fetchone()
    if row is None:
        raise ValueError(f"a schedule named {name!r} exists; delete it first or pick "
                         "another name")
    return _get(conn, name)


def _get(conn: psycopg.Connection, name: str) -> Schedule:
    return next(s for s in list_schedules(conn) if s.name == name)


def delete(conn: psycopg.Connection, name: str) -> bool:
    """Delete schedule `name` and the record of its fires (the jobs stay); whether it was
    there."""
    return conn.execute(query("delete").sql, {"name": _name(name)}).fetchone() is not None


def list_schedules(conn: psycopg.Connection) -> list[Schedule]:
    """Every schedule, by name (at most MAX_SCHEDULES)."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(query("list").sql, {"limit": MAX_SCHEDULES}).fetchall()
    return [Schedule(**{k: v for k, v in row.items() if k != "now"}) for row in rows]


def plan(conn: psycopg.Connection) -> Plan:
    """Read the database clock and the schedules; per schedule, the latest `catch_up + 1`
    fire times that have come (after its start), each with the end of its window."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(query("list").sql, {"limit": MAX_SCHEDULES}).fetchall()
        now = rows[0]["now"] if rows else conn.execute(query("now").sql).fetchone()[0]
    candidates = []
    for row in rows:
        zone = ZoneInfo(row["timezone"])
        for t in _latest(row["cron"], zone, now, row["starts_at"], row["catch_up"] + 1):
            candidates.append((row["id"], t, window_end(row["cron"], row["timezone"], t,
                                                        row["catch_up"])))
    return Plan(now=now, candidates=tuple(candidates))


def enqueue(conn: psycopg.Connection, planned: Plan, *, scheduler: str) -> list[Fire]:
    """Enqueue the planned fire times that are still in their window by the clock NOW and
    that no scheduler enqueued yet, in one statement; the fires this call enqueued."""
    check_instance(planned, "planned (from schedules.plan())", Plan)
    name = check_text(scheduler, "scheduler", limit=MAX_SCHEDULER_CHARS)
    if not planned.candidates:
        return []
    _check_candidates(conn, planned)
    params = {"schedule_ids": [c[0] for c in planned.candidates],
              "fire_ats": [c[1] for c in planned.candidates],
              "expires_ats": [c[2] for c in planned.candidates], "scheduler": name}
    rows = conn.execute(query("enqueue").sql, params).fetchall()
    return [Fire(*row) for row in rows]


def _check_candidates(conn: psycopg.Connection, planned: Plan) -> None:
    """A Plan is a plain dataclass: refuse one whose candidates plan() could not have made
    (a time that is not a fire time of its schedule, a window that is not the policy's),
    before anything is written. Schedules deleted since the plan are left to the statement,
    which skips them."""
    bound = MAX_SCHEDULES * (MAX_CATCH_UP + 1)
    check_instance(planned.candidates, "planned.candidates", tuple)
    if len(planned.candidates) > bound:
        raise ValueError(f"planned.candidates must hold at most {bound} candidates, got "
                         f"{len(planned.candidates)}")
    rows = {s.id: s for s in list_schedules(conn)}
    for candidate in planned.candidates:
        check_instance(candidate, "a candidate", tuple)
        if len(candidate) != 3:
            raise ValueError(f"a candidate is (schedule id, fire time, window end), got "
                             f"{candidate!r}")
        sid, fire_at, end = candidate
        check_int(sid, "a candidate's schedule id")
        _aware(fire_at, "a candidate's fire time")
        _aware(end, "a candidate's window end")
        s = rows.get(sid)
        if s is None:
            continue
        zone = ZoneInfo(s.timezone)
        actual = next(CronSim(s.cron, (fire_at - timedelta(microseconds=1)).astimezone(zone)),
                      None)
        if actual is None or actual.astimezone(UTC) != fire_at.astimezone(UTC) or \
                end != window_end(s.cron, s.timezone, fire_at, s.catch_up):
            raise ValueError(f"candidate {candidate!r} is not a fire time of schedule "
                             f"{s.name!r} with its policy's window; make plans with plan()")


def tick(conn: psycopg.Connection, *, scheduler: str) -> list[Fire]:
    """One scheduler pass: plan, then enqueue; the fires this pass enqueued."""
    check_text(scheduler, "scheduler", limit=MAX_SCHEDULER_CHARS)
    return enqueue(conn, plan(conn), scheduler=scheduler)


def fires(conn: psycopg.Connection, name: str | None = None, *,
          limit: int = 1000) -> list[dict[str, Any]]:
    """The recorded fires, newest first: name, fire_at, job_id, enqueued_at, scheduler."""
    params = {"name": None if name is None else _name(name),
              "limit": check_int(limit, "limit", minimum=1, maximum=100_000)}
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query("fires").sql, params).fetchall()
