"""queue.schedules against PostgreSQL, on the manual clock: each fire time once, whoever
ticks; the missed-fire policy; a paused scheduler's stale plan; refusals write nothing;
the `cachequeue scheduler` command's one pass."""

import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cachequeue import db
from cachequeue.errors import InvalidJob, PayloadTooLarge, UnknownKind
from cachequeue.queue import schedules
from cachequeue.queue.limits import MAX_PAYLOAD_BYTES

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)  # a Monday noon


def at(conn, when):
    db.set_clock(conn, when.isoformat())


@pytest.fixture
def sconn(conn):
    """The test's schema with the schedules' tables, a kind of its own, the clock at T0."""
    schedules.install(conn)
    conn.execute("INSERT INTO job_kinds (kind, description) VALUES ('report', 'a test kind') "
                 "ON CONFLICT DO NOTHING")
    at(conn, T0)
    return conn


def counts(conn):
    return conn.execute("SELECT (SELECT count(*) FROM schedules), "
                        "(SELECT count(*) FROM schedule_fires), (SELECT count(*) FROM jobs)"
                        ).fetchone()


def test_each_fire_time_is_enqueued_once_with_its_job(sconn):
    s = schedules.create(sconn, "every-5", "*/5 * * * *", kind="report",
                         payload={"scope": "all"}, tenant_id=7)
    assert s.starts_at == T0 and s.missed == "skip"
    assert schedules.tick(sconn, scheduler="a") == []  # 12:00 is not after the start
    for minutes in (1, 5, 5, 7, 10):
        at(sconn, T0 + timedelta(minutes=minutes))
        schedules.tick(sconn, scheduler="a")
        schedules.tick(sconn, scheduler="b")
    fired = schedules.fires(sconn, "every-5")
    assert [f["fire_at"] for f in fired] == [T0 + timedelta(minutes=10), T0 + timedelta(minutes=5)]
    jobs_rows = sconn.execute("SELECT id, tenant_id, kind, payload, idempotency_key FROM jobs "
                              "ORDER BY id").fetchall()
    assert [r[0] for r in jobs_rows] == sorted(f["job_id"] for f in fired)
    assert {(r[1], r[2], r[3]["scope"]) for r in jobs_rows} == {(7, "report", "all")}
    assert jobs_rows[0][4] == f"schedule:{s.id}:2026-03-02T12:05:00Z"


def test_two_schedulers_racing_enqueue_each_fire_time_once(sconn, schema):
    schedules.create(sconn, "minutely", "* * * * *", kind="report", payload={}, catch_up=5)
    at(sconn, T0 + timedelta(minutes=6))
    conns = [db.connect(schema) for _ in range(4)]
    try:
        plans = []
        for c in conns:
            at(c, T0 + timedelta(minutes=6))
            plans.append(schedules.plan(c))
        barrier, results = threading.Barrier(len(conns)), {}

        def run(i):
            barrier.wait()
            results[i] = schedules.enqueue(conns[i], plans[i], scheduler=f"s{i}")

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(conns))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        for c in conns:
            c.close()
    enqueued = [f.fire_at for r in results.values() for f in r]
    assert sorted(enqueued) == [T0 + timedelta(minutes=m) for m in range(1, 7)]  # once each
    assert counts(sconn)[1:] == (6, 6)


def _waiting_on_a_lock(conn, pid):
    for _ in range(500):
        if conn.execute("SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                        (pid,)).fetchone()[0]:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("first_commits", [True, False], ids=["commit", "rollback"])
def test_a_second_scheduler_waits_for_the_first_and_then_does_nothing_or_everything(
        sconn, schema, first_commits):
    schedules.create(sconn, "minutely", "* * * * *", kind="report", payload={})
    now = T0 + timedelta(minutes=1)
    with db.connect(schema) as a, db.connect(schema) as b:
        at(a, now), at(b, now)
        plan_a, plan_b = schedules.plan(a), schedules.plan(b)
        result = {}
        a.execute("BEGIN")
        assert len(schedules.enqueue(a, plan_a, scheduler="a")) == 1  # not committed yet
        thread = threading.Thread(
            target=lambda: result.update(b=schedules.enqueue(b, plan_b, scheduler="b")))
        thread.start()
        assert _waiting_on_a_lock(sconn, b.info.backend_pid), "b waits on a's unique key"
        a.execute("COMMIT" if first_commits else "ROLLBACK")
        thread.join(30)
    assert len(result["b"]) == (0 if first_commits else 1)
    assert counts(sconn)[1:] == (1, 1)
    assert schedules.fires(sconn)[0]["scheduler"] == ("a" if first_commits else "b")


def test_a_paused_scheduler_cannot_enqueue_what_the_policy_gave_up(sconn):
    schedules.create(sconn, "every-5", "*/5 * * * *", kind="report", payload={})  # skip
    at(sconn, T0 + timedelta(minutes=5))
    stale = schedules.plan(sconn)  # planned 12:05, then paused (SIGSTOP) ...
    assert [c[1] for c in stale.candidates] == [T0 + timedelta(minutes=5)]
    at(sconn, T0 + timedelta(minutes=11))  # ... past the next fire time: 12:05's window is over
    assert schedules.enqueue(sconn, stale, scheduler="paused") == []
    fresh = schedules.tick(sconn, scheduler="live")
    assert [f.fire_at for f in fresh] == [T0 + timedelta(minutes=10)]  # the latest only
    assert counts(sconn)[1:] == (1, 1)


@pytest.mark.parametrize("catch_up, expected", [(0, [60]), (2, [50, 55, 60])])
def test_after_all_schedulers_were_down_the_policy_bounds_what_is_enqueued(
        sconn, catch_up, expected):
    schedules.create(sconn, "every-5", "*/5 * * * *", kind="report", payload={},
                     catch_up=catch_up)
    at(sconn, T0 + timedelta(minutes=62))  # nobody ticked for an hour: 12 fire times came
    fired = schedules.tick(sconn, scheduler="back")
    assert [f.fire_at for f in fired] == [T0 + timedelta(minutes=m) for m in expected]
    assert schedules.tick(sconn, scheduler="again") == []
    at(sconn, T0 + timedelta(minutes=66))
    assert [f.fire_at for f in schedules.tick(sconn, scheduler="back")] == [
        T0 + timedelta(minutes=65)]


def test_a_berlin_schedule_fires_once_across_the_fall_back_night(sconn):
    at(sconn, datetime(2026, 10, 24, 12, tzinfo=UTC))
    schedules.create(sconn, "nightly", "30 2 * * *", timezone="Europe/Berlin",
                     kind="report", payload={})
    when = datetime(2026, 10, 24, 22, tzinfo=UTC)
    while when <= datetime(2026, 10, 25, 6, tzinfo=UTC):  # every 10 minutes through the night
        at(sconn, when)
        schedules.tick(sconn, scheduler="s")
        when += timedelta(minutes=10)
    assert [f["fire_at"] for f in schedules.fires(sconn)] == [datetime(2026, 10, 25, 0, 30,
                                                                       tzinfo=UTC)]


@pytest.mark.parametrize("args, error", [
    (dict(name="x" * 101), ValueError),
    (dict(name=" padded"), ValueError),
    (dict(name="two\nlines"), ValueError),
    (dict(cron="every day"), ValueError),
    (dict(timezone="Nowhere/Atlantis"), ValueError),
    (dict(kind="no-such-kind"), UnknownKind),
    (dict(payload=["not", "an", "object"]), InvalidJob),
    (dict(payload={"blob": "x" * MAX_PAYLOAD_BYTES}), PayloadTooLarge),
    (dict(catch_up=-1), ValueError),
    (dict(catch_up=schedules.MAX_CATCH_UP + 1), ValueError),
    (dict(catch_up=True), TypeError),
    (dict(tenant_id="7"), TypeError),
    (dict(max_attempts=0), ValueError),
])
def test_a_refused_schedule_writes_nothing(sconn, args, error):
    good = dict(name="ok", cron="* * * * *", kind="report", payload={})
    before = counts(sconn)
    with pytest.raises(error):
        schedules.create(sconn, **(good | args))
    assert counts(sconn) == before


def test_a_taken_name_is_refused_and_delete_removes_the_record_of_fires(sconn):
    schedules.create(sconn, "dup", "* * * * *", kind="report", payload={})
    with pytest.raises(ValueError, match="exists"):
        schedules.create(sconn, "dup", "0 * * * *", kind="report", payload={})
    assert [s.cron for s in schedules.list_schedules(sconn)] == ["* * * * *"]
    at(sconn, T0 + timedelta(minutes=1))
    schedules.tick(sconn, scheduler="s")
    assert schedules.delete(sconn, "dup") and not schedules.delete(sconn, "dup")
    assert counts(sconn) == (0, 0, 1)  # the job stays in the queue


def test_a_bad_scheduler_name_is_refused_before_anything_is_read(sconn):
    with pytest.raises(ValueError, match="scheduler"):
        schedules.tick(sconn, scheduler="x" * 201)
    with pytest.raises(TypeError):
        schedules.tick(sconn, scheduler=None)


# ------------------------------------------------------------------ the command


@pytest.fixture
def no_suffix(monkeypatch):
    monkeypatch.delenv("CACHEQUEUE_SCHEMA_SUFFIX", raising=False)


def scheduler_cli(*args):
    script = Path(sys.executable).parent / "cachequeue"
    return subprocess.run([str(script), "scheduler", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_command_runs_one_pass_on_a_frozen_clock(no_suffix, sconn, schema):
    schedules.create(sconn, "every-5", "*/5 * * * *", kind="report", payload={})
    done = scheduler_cli("--schema", schema, "--once", "--name", "cli-1",
                         "--clock", "2026-03-02T12:07:00Z")
    assert done.returncode == 0, done.stderr
    assert " cli-1 fired " in done.stderr and "schedule=every-5" in done.stderr
    fired = schedules.fires(sconn)
    assert [(f["fire_at"], f["scheduler"]) for f in fired] == [(T0 + timedelta(minutes=5),
                                                               "cli-1")]


@pytest.mark.parametrize("args, message", [
    (["--interval", "0"], "--interval"),
    (["--clock", "2026-03-02T12:07:00Z"], "with --once"),
    (["--once", "--clock", "yesterday"], "ISO 8601"),
    (["--once", "--clock", "2026-03-02T12:07:00"], "offset"),
    (["--name", "a\tb"], "--name"),
])
def test_bad_arguments_are_one_line_and_exit_2_writing_nothing(no_suffix, sconn, schema,
                                                               args, message):
    schedules.create(sconn, "every-5", "*/5 * * * *", kind="report", payload={})
    done = scheduler_cli("--schema", schema, *args)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert counts(sconn)[1:] == (0, 0)



def test_no_more_than_max_schedules_are_created(sconn, monkeypatch):
    monkeypatch.setattr(schedules, "MAX_SCHEDULES", 2)
    for name in ("a", "b"):
        schedules.create(sconn, name, "* * * * *", kind="report", payload={})
    before = counts(sconn)
    with pytest.raises(ValueError, match="MAX_SCHEDULES"):
        schedules.create(sconn, "c", "* * * * *", kind="report", payload={})
    assert counts(sconn) == before


def _wait_for(proc, text, lines, wait=60.0):
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return line
    raise AssertionError(f"no {text!r} in {lines}")


def test_two_running_schedulers_enqueue_the_due_fire_time_once_and_stop_on_sigterm(
        no_suffix, sconn, schema):
    # The real clock: a schedule created "two minutes ago" owes the latest minute at once.
    db.set_clock(sconn, None)
    real_now = sconn.execute("SELECT clock_timestamp()").fetchone()[0]
    at(sconn, real_now - timedelta(minutes=2))
    schedules.create(sconn, "minutely", "* * * * *", kind="report", payload={})
    script = Path(sys.executable).parent / "cachequeue"
    procs = [subprocess.Popen([str(script), "scheduler", "--schema", schema, "--interval", "0.2",
                               "--name", f"loop-{i}"], stderr=subprocess.PIPE, text=True)
             for i in (1, 2)]
    try:
        logs = [[], []]
        for p, lines in zip(procs, logs, strict=True):
            _wait_for(p, " started ", lines)
        deadline = time.monotonic() + 60
        while not schedules.fires(sconn) and time.monotonic() < deadline:
            time.sleep(0.1)
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p, lines in zip(procs, logs, strict=True):
            _wait_for(p, " stopped", lines)
            assert p.wait(30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(30)
    fired = schedules.fires(sconn)
    latest = real_now.replace(second=0, microsecond=0)
    # skip: the first pass enqueued the latest minute only, not the one before it
    assert fired and fired[-1]["fire_at"] in (latest, latest + timedelta(minutes=1))
    # Each minute that came during the run once, whoever of the two enqueued it.
    assert len({f["fire_at"] for f in fired}) == len(fired) == counts(sconn)[2]


@pytest.mark.parametrize("forge", [
    lambda p: p.candidates[0][:2] + (p.candidates[0][2] + timedelta(hours=1),),  # a wider window
    lambda p: (p.candidates[0][0], p.candidates[0][1] - timedelta(minutes=2),
               p.candidates[0][2]),                                              # not a fire time
    lambda p: (p.candidates[0][0], p.candidates[0][1].replace(tzinfo=None), p.candidates[0][2]),
    lambda p: ("1", p.candidates[0][1], p.candidates[0][2]),
    lambda p: (1, 2),
], ids=["window", "not-a-fire-time", "naive", "id-type", "shape"])
def test_a_forged_plan_is_refused_writing_nothing(sconn, forge):
    schedules.create(sconn, "every-5", "*/5 * * * *", kind="report", payload={})
    at(sconn, T0 + timedelta(minutes=5))
    real = schedules.plan(sconn)
    forged = schedules.Plan(now=real.now, candidates=(forge(real),))
    with pytest.raises((ValueError, TypeError)):
        schedules.enqueue(sconn, forged, scheduler="forger")
    assert counts(sconn)[1:] == (0, 0)
    assert len(schedules.enqueue(sconn, real, scheduler="honest")) == 1
