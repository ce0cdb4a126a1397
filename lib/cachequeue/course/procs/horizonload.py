"""Chapter 14's experiment: the queue under steady load while something holds the horizon.

    with embedded.Server.private(settings=horizonload.SETTINGS) as server:
        conn = db.connect(schema, url=server.url)
        points = horizonload.run(conn, server.url, schema, holder="report")

`Holder` opens a session that holds the MVCC horizon the way real systems do:

- "report": an analytics report in a REPEATABLE READ transaction, between two of its
  statements (its snapshot: `backend_xmin`);
- "writer": a session idle in transaction after a write (its transaction id: `backend_xid`;
  `pg_current_xact_id()` assigns one as the first write would);
- "query": a long statement still running (a READ COMMITTED snapshot lives as long as the
  statement), cancelled by `close()`.

`run` drives the queue by hand in rounds, with no sleeps: each round inserts
`jobs_per_round` pending jobs, measures what one claim costs (EXPLAIN ANALYZE BUFFERS of
the claim statement, rolled back), drains them with `claim_many` / `finish_many` batches,
then runs VACUUM (VERBOSE), as an autovacuum that keeps up would, and records what it
removed and what it had to keep ("dead but not yet removable"), and the table's and its
indexes' sizes. The phases are `before` rounds with no holder, `held` rounds with one, and
`after` rounds once it is gone, with a point `released` between them: the VACUUM run the
moment the holder is gone, before any claim. Autovacuum is off for the jobs table during the run, so
only these VACUUMs touch it and every count is the same on every run; the claim's wall time
is recorded too, but it depends on the machine.

`churn` runs rounds on a clock stepped by hand, with or without `queue.retention`, and
returns the table's size after each: what retention does to a table under steady churn.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import psycopg
from psycopg import sql

from ... import db, sqlfile
from ...checks import check_autocommit_idle, check_choice, check_int, check_seconds, check_text
from ...queue import jobs, retention
from ..probes import horizon, plans

__all__ = ["HOLDERS", "SETTINGS", "Holder", "Point", "churn", "claim_buffers", "limited_role",
           "run", "run_round", "wait_released"]

HOLDERS = ("report", "writer", "query")
SETTINGS = {"fsync": "off", "max_connections": "60", "autovacuum": "off"}
"""A private server's settings for the chapter: autovacuum off, so only the run's own
VACUUMs touch a table (the chapter turns it on per table where it teaches it)."""

MAX_JOBS_PER_ROUND = 100_000
MAX_ROUNDS = 1_000
BATCH = 10  # jobs per claim_many / finish_many: the worker's default concurrency
_QUERIES = sqlfile.load(__package__, "horizonload.sql")


class Holder:
    """A session that holds the horizon until `close()` (also a context manager)."""

    def __init__(self, url: str, schema: str, kind: str = "report", *,
                 application_name: str | None = None, user: str | None = None) -> None:
        self.kind = check_choice(kind, "kind", HOLDERS)
        name = check_text(application_name or f"holder-{kind}", "application_name", limit=60)
        self._url = url
        extra = {} if user is None else {"user": check_text(user, "user", limit=63)}
        self.conn = db.connect(schema, url=url, **extra)
        self.conn.execute("SELECT set_config('application_name', %s, false)", (name,))
        self.pid = self.conn.info.backend_pid
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        try:
            if kind == "report":
                self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                self.conn.execute(_QUERIES["report"].sql)  # the snapshot is taken here
            elif kind == "writer":
                self.conn.execute("BEGIN")
                self.conn.execute(_QUERIES["write"].sql)
            else:
                self._thread = threading.Thread(target=self._long_query, daemon=True)
                self._thread.start()
                self._wait_active(url, schema)
        except BaseException:
            self.conn.close()
            raise

    def _long_query(self) -> None:
        try:
            self.conn.execute(_QUERIES["long_query"].sql)
        except psycopg.errors.QueryCanceled:
            pass
        except BaseException as error:  # noqa: BLE001  (reported by close())
            self.error = error

    def _wait_active(self, url: str, schema: str, timeout: float = 30.0) -> None:
        with db.connect(schema, url=url) as observer:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                found = observer.execute(_QUERIES["snapshot_of"].sql, {"pid": self.pid}).fetchone()
                if found and found[0]:
                    return
                time.sleep(0.01)
        raise TimeoutError(f"the long query of backend {self.pid} did not start in {timeout} s")

    def close(self) -> None:
        """End the transaction (cancel the long query) and close the session."""
        if self._thread is not None:
            with db.connect(url=self._url) as other:
                other.execute("SELECT pg_cancel_backend(%s)", (self.pid,))
            self._thread.join(30)
        elif not self.conn.closed and not self.conn.broken:
            # Synchronous: the horizon is released when this returns. A bare close() only
            # asks the backend to exit, and it may still hold the snapshot a moment later.
            with contextlib.suppress(psycopg.Error):  # a timeout ended the session
                self.conn.execute("ROLLBACK")
        self.conn.close()

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_released(conn: psycopg.Connection, pid: int, *, timeout: float = 30.0) -> bool:
    """Wait until backend `pid` holds neither a snapshot nor a transaction id (a timeout
    cancelled its statement or ended its session); True if the session itself is gone."""
    check_int(pid, "pid", minimum=1)
    deadline = time.monotonic() + check_seconds(timeout, "timeout", upper=600)
    while True:
        alive, holds = conn.execute(_QUERIES["holds"].sql, {"pid": pid}).fetchone()
        if not holds:
            return not alive
        if time.monotonic() > deadline:
            raise TimeoutError(f"backend {pid} still holds the horizon after {timeout} s")
        time.sleep(0.02)


def limited_role(conn: psycopg.Connection, name: str, *, idle_in_transaction: float,
                 statement: float) -> None:
    """Create login role `name` for reports: it may read the jobs table of `conn`'s schema,
    and its sessions get both timeouts (seconds) by default, as `ALTER ROLE ... SET` gives
    them to every new session of the role (a session may still SET them otherwise)."""
    role = sql.Identifier(check_text(name, "name", limit=63))
    idle = round(1000 * check_seconds(idle_in_transaction, "idle_in_transaction", upper=86400))
    limit = round(1000 * check_seconds(statement, "statement", upper=86400))
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    with conn.transaction():
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), role))
        conn.execute(sql.SQL("GRANT SELECT ON jobs TO {}").format(role))
        conn.execute(sql.SQL("ALTER ROLE {} SET idle_in_transaction_session_timeout = {}")
                     .format(role, sql.Literal(f"{idle}ms")))
        conn.execute(sql.SQL("ALTER ROLE {} SET statement_timeout = {}")
                     .format(role, sql.Literal(f"{limit}ms")))


@dataclass(frozen=True)
class Point:
    """One round: its phase, the jobs finished so far, what the round's VACUUM removed and
    had to keep (dead but not yet removable), sizes in bytes, the claim's cost in buffers
    (8 kB pages read or hit) and its mean wall time in ms (machine-dependent); None for the
    `released` point, which claims nothing."""

    phase: str
    round: int
    jobs: int
    removed: int
    kept: int
    table_bytes: int
    index_bytes: int
    claim_buffers: int | None
    claim_ms: float | None


def claim_buffers(conn: psycopg.Connection, limit: int = BATCH) -> int:
    """Buffers (pages hit or read) one claim of `limit` jobs touches: EXPLAIN (ANALYZE,
    BUFFERS) of the claim statement, run and rolled back."""
    params = {"limit": check_int(limit, "limit", minimum=1, maximum=1000), "lease": 30.0,
              "kinds": None, "worker": None, "chosen": None}
    doc = plans.explain(conn, jobs.query("claim").sql, params, analyze=True)
    top = doc[0]["Plan"]
    return int(top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0))


def run_round(conn: psycopg.Connection, phase: str, number: int, done: int,
              jobs_per_round: int) -> Point:
    """One round (see the module docstring); `done` is the jobs finished before it."""
    plans.fill_pending(conn, jobs_per_round)
    cost = claim_buffers(conn)
    spent, calls, finished = 0.0, 0, 0
    while True:
        start = time.perf_counter()
        claims = jobs.claim_many(conn, BATCH)
        spent += time.perf_counter() - start
        calls += 1
        if not claims:
            break
        finished += sum(jobs.finish_many(conn, [(c, {}) for c in claims]))
    counts = horizon.vacuum_jobs(conn)
    table, index = conn.execute(_QUERIES["sizes"].sql).fetchone()
    return Point(phase, number, done + finished, counts.removed, counts.kept, table, index,
                 cost, 1000 * spent / calls)


def run(conn: psycopg.Connection, url: str, schema: str, *, holder: str = "report",
        before: int = 3, held: int = 6, after: int = 3, jobs_per_round: int = 100) -> list[Point]:
    """The three phases on `conn`'s schema (its jobs table must hold no pending job)."""
    check_autocommit_idle(conn, "horizonload.run")
    check_choice(holder, "holder", HOLDERS)
    rounds = [check_int(n, name, minimum=1, maximum=MAX_ROUNDS)
              for n, name in ((before, "before"), (held, "held"), (after, "after"))]
    per_round = check_int(jobs_per_round, "jobs_per_round", minimum=1, maximum=MAX_JOBS_PER_ROUND)
    conn.execute(_QUERIES["autovacuum_off"].sql)
    points: list[Point] = []

    def phase(name: str, count: int) -> None:
        for _ in range(count):
            done = points[-1].jobs if points else 0
            points.append(run_round(conn, name, len(points) + 1, done, per_round))

    phase("before", rounds[0])
    with Holder(url, schema, holder):
        phase("held", rounds[1])
    # The moment the holder is gone: one VACUUM before any claim prunes a page.
    counts = horizon.vacuum_jobs(conn)
    table, index = conn.execute(_QUERIES["sizes"].sql).fetchone()
    last = points[-1]
    points.append(Point("released", len(points) + 1, last.jobs, counts.removed, counts.kept,
                        table, index, None, None))
    phase("after", rounds[2])
    return points


def churn(conn: psycopg.Connection, *, rounds: int, jobs_per_round: int,
          keep_seconds: float | None, step_seconds: float = 60.0) -> list[tuple[int, int]]:
    """Steady churn on the database clock, stepped by hand: each round is `step_seconds`
    later, inserts and drains `jobs_per_round` jobs, purges finished jobs older than
    `keep_seconds` with `queue.retention` (None: keeps everything), and VACUUMs. Returns
    (jobs finished so far, table bytes) per round; the session's clock is released after."""
    check_autocommit_idle(conn, "horizonload.churn")
    count = check_int(rounds, "rounds", minimum=1, maximum=MAX_ROUNDS)
    per_round = check_int(jobs_per_round, "jobs_per_round", minimum=1, maximum=MAX_JOBS_PER_ROUND)
    step = check_seconds(step_seconds, "step_seconds")
    if keep_seconds is not None:
        check_seconds(keep_seconds, "keep_seconds", allow_zero=True)
    start = conn.execute("SELECT cq_now()").fetchone()[0]
    conn.execute(_QUERIES["autovacuum_off"].sql)
    retention.install(conn)
    done, found = 0, []
    try:
        for number in range(1, count + 1):
            db.set_clock(conn, start + timedelta(seconds=number * step))
            plans.fill_pending(conn, per_round)
            while claims := jobs.claim_many(conn, BATCH):
                done += sum(jobs.finish_many(conn, [(c, {}) for c in claims]))
            if keep_seconds is not None:
                retention.purge(conn, older_than=keep_seconds, batch_size=BATCH * 10)
            horizon.vacuum_jobs(conn)
            found.append((done, conn.execute(_QUERIES["sizes"].sql).fetchone()[0]))
    finally:
        db.set_clock(conn, None)
    return found
