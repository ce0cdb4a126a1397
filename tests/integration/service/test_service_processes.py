"""`make serve` and `cachequeue serve` as real process trees: Ctrl-C (SIGINT to the process
group) stops the service and both workers cleanly, and every child exits; a second signal
makes the workers hand back at once; a database that cannot be reached is one error line."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from servicekit import auth, wait_until

from cachequeue.course.procs.stack import SUMMARY_HANDLERS_SPEC, Stack
from cachequeue.queue import jobs
from cachequeue.queue.logline import parse

ROOT = Path(__file__).resolve().parents[3]


class Output:
    """Every line a process writes (stdout and stderr together), and its parsed events."""

    def __init__(self, proc):
        self.proc, self.lines, self._changed = proc, [], threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def events(self, event):
        with self._changed:
            return [e for e in map(parse, self.lines) if e and e["event"] == event]

    def wait_for(self, event, count=1, timeout=60):
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.events(event)) >= count, timeout):
                raise TimeoutError(f"no {count} x {event!r}; last lines:\n" +
                                   "\n".join(self.lines[-20:]))
        return self.events(event)


def session_members(sid: int) -> list[int]:
    """Processes whose session id is `sid` (the process tree started with start_new_session)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # after "pid (comm)": state, ppid, pgrp, session
            found.append(int(stat.parent.name))
    return found


@pytest.mark.redis  # `make serve` runs `make db`, which starts (or finds) Redis
@pytest.mark.nats  # and NATS too
def test_ctrl_c_stops_make_serve_and_every_child_exits(schema, conn):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    make = subprocess.Popen(["make", "--no-print-directory", "serve", "SERVE_PORT=0",
                             "SERVE_METRICS_PORT=0", f"SERVE_SCHEMA={schema}"], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    out = Output(make)
    try:
        [listening] = out.wait_for("listening")
        out.wait_for("ready", count=2)  # both workers connected and listening
        assert len(session_members(make.pid)) >= 4  # make, the service, two workers
        with httpx.Client(base_url=listening["url"], timeout=10) as http:
            assert http.get("/demo/users").status_code == 200, "make serve is in demo mode"
            job_id = http.post("/v1/documents/44/summaries", headers=auth(12)).json()["id"]
            out.wait_for("finished")
            assert http.get(f"/v1/jobs/{job_id}", headers=auth(12)).json()["state"] == "done"
        with httpx.Client(base_url=listening["metrics_url"], timeout=10) as ops:
            assert "cq_attempts_ended_total" in ops.get("/metrics").text
        os.killpg(make.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        make.wait(60)
        wait_until(lambda: session_members(make.pid) == [], 30, "every child exited")
    finally:
        if make.poll() is None or session_members(make.pid):
            os.killpg(make.pid, signal.SIGKILL)
    assert len(out.events("stopped")) == 3, "two workers and the service say they stopped"
    assert out.events("stopped")[-1]["workers"] == "0,0", "both workers exited 0"
    assert [e["signal"] for e in out.events("stopping") if e["worker"] == "service"] == ["SIGINT"]
    assert jobs.status(conn, tenant_id=1, job_id=job_id).state == "done"


def test_a_second_signal_makes_the_workers_hand_back_at_once(schema, conn):
    stack = Stack(schema)
    try:
        api = stack.start_api(workers=1, handlers=SUMMARY_HANDLERS_SPEC, shutdown_timeout=300)
        with httpx.Client(base_url=api.url, timeout=10) as http:
            job_id = http.post("/v1/jobs", json={"kind": "pause", "payload": {"seconds": 600}},
                               headers=auth(11)).json()["id"]
        wait_until(lambda: any("claimed" in line for line in api.lines), 60, "claimed")
        started = time.monotonic()
        api.send(signal.SIGINT)
        wait_until(lambda: sum(" stopping " in line for line in api.lines) >= 2, 30,
                   "service and worker stopping")
        api.send(signal.SIGINT)
        code = api.wait(60)
        took = time.monotonic() - started
    finally:
        stack.close()
    assert code == 3, "a worker handed a job back"
    assert took < 60, "not the 300 s shutdown timeout: the second signal reached the worker"
    assert any("handed-back" in line for line in api.lines)
    assert jobs.status(conn, tenant_id=1, job_id=job_id).state == "pending"


def test_an_unreachable_database_is_one_error_line_and_exit_1(schema):
    env = dict(os.environ, DATABASE_URL="postgresql://postgres@127.0.0.1:1/nowhere")
    done = subprocess.run([sys.executable, "-m", "cachequeue", "serve", "--schema", schema,
                           "--app", "cachequeue.course.app.webapp:create_app", "--port", "0"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    [line] = [e for e in map(parse, done.stderr.splitlines()) if e]
    assert line["event"] == "error" and "cannot connect to PostgreSQL" in line["error"]


def test_a_worker_that_dies_is_started_again(schema, conn):
    stack = Stack(schema)
    try:
        api = stack.start_api(workers=1, handlers=SUMMARY_HANDLERS_SPEC, metrics_port=0)
        first = api.wait_for("worker-started")
        os.kill(first["pid"], signal.SIGKILL)
        exited = api.wait_for("worker-exited", timeout=30)
        second = api.wait_for("worker-started", timeout=30, where=lambda e: e["pid"] != first["pid"])
        with httpx.Client(base_url=api.url, timeout=10) as http:
            job_id = http.post("/v1/jobs", json={"kind": "noop"}, headers=auth(11)).json()["id"]
            unserved = http.post("/v1/jobs", json={"kind": "flaky"}, headers=auth(11))
        wait_until(lambda: jobs.status(conn, tenant_id=1, job_id=job_id).state == "done", 60,
                   "the restarted worker ran the job")
        with httpx.Client(base_url=api.wait_for("listening")["metrics_url"], timeout=10) as ops:
            text = ops.get("/metrics").text
    finally:
        codes = stack.close()
    assert exited["code"] == -9 and exited["restart_in"] == 1.0
    assert second["name"] == first["name"]
    assert (unserved.status_code, unserved.json()["code"]) == (422, "no_worker_for_kind")
    assert "cq_worker_restarts_total 1.0" in text and "cq_workers_running 1.0" in text
    assert codes == {"service": 0}


def test_demo_needs_a_factory_that_takes_it(schema):
    done = subprocess.run([sys.executable, "-m", "cachequeue", "serve", "--schema", schema,
                           "--app", "cachequeue.service:create_app", "--demo", "--port", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "does not take demo=True" in done.stderr


def test_restarts_back_off_and_a_stable_run_starts_over():
    from cachequeue.cli.serving import restart_delay

    assert [restart_delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 30, 30, 30]


def test_a_port_in_use_is_found_before_the_schema_is_created(conn):
    import uuid

    from cachequeue import db
    from cachequeue.cli.serving import listen_socket

    taken = listen_socket("127.0.0.1", 0)
    taken.listen()
    schema = f"port_{uuid.uuid4().hex[:8]}"
    try:
        done = subprocess.run([sys.executable, "-m", "cachequeue", "serve", "--schema", schema,
                               "--app", "cachequeue.course.app.webapp:create_app",
                               "--port", str(taken.getsockname()[1])],
                              capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert done.returncode == 1
    [line] = [e for e in map(parse, done.stderr.splitlines()) if e]
    assert line["event"] == "error" and "in use" in line["error"]
    created = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s",
                           [db.schema_name(schema)]).fetchone()[0]
    assert created == 0
