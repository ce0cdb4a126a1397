"""The named variants a verify run can select: the real queue, and mutants of it.

Each mutant takes ONE safeguard out of the queue (its SQL is in `sql/variants.sql`, next
to what it removes), so that a run can show the checker catches what that safeguard
prevents:

- `no-token-check`: finish by job id and state only (no lease token, no expiry);
- `read-then-claim`: SELECT the runnable jobs, then UPDATE them, with no FOR UPDATE SKIP
  LOCKED and no re-check: two workers can take the same job (and in a run they do: each
  worker's first read waits for a second worker's before claiming, see `_rendezvous`);
- `reset-on-shutdown`: a worker told to stop (SIGTERM) sets every running job back to
  pending, everyone else's included;
- `unfenced-batch`: the batched completion checks only the job id, as River's and
  pgqueuer's batches do;
- `heartbeat-after-expiry`: the heartbeat renews a lease that already ran out;
- `no-backoff`: the claim takes a pending job whether or not its `run_after` has come, so
  a retry runs before its backoff (check 5, retry-delay);
- `finish-unheld`: the finish accepts a job its caller no longer holds, when nobody holds
  it (a token check that tolerates NULL, no state check): a job the sweep failed, or that
  was cancelled, turns done (checks 9 and 2);
- `unlocked-claim`: the claim reads its candidates without locking them (no FOR UPDATE
  SKIP LOCKED; River #1302's shape): two claims contending for one row both take it
  (check 4);
- `worker-clock`: the claim computes the lease end from the worker's clock instead of the
  database's (`set_worker_clock`: the worker's offset from the database's clock), so a
  worker whose clock is off sets leases of the wrong length (check 4, lease-length);
- `uncounted-takeover`: the takeover of an expired lease does not count the attempt: the
  attempt row it opens collides with the previous one's and the worker dies of the
  unique violation (check 10, worker-died).

And one variant that is not ours: `custom`, a claim and a finish written by someone else
(the learner's lab of chapter 06), given as SQL text. `write_custom(folder, claim, finish)`
checks the two statements and writes them to `custom.sql` in the run's folder; the run's
worker processes load them from there (`install("custom", folder=...)`). SQL text, not
Python functions: text crosses into a child process, a notebook's function does not. Each
statement is an `UPDATE jobs ... RETURNING` (or `WITH ... UPDATE jobs ... RETURNING`) with
the real statements' parameter names; `sql/custom.sql` wraps it in the attempt rows and the
result row the real statements keep (see `CUSTOM_PARAMETERS`).

`install(variant)` swaps the mutant's functions into `queue.jobs` / `queue.registry` of the
CURRENT process, where the real `queue.Worker` calls them: only ever in a verify run's own
worker processes (`verify.workerproc`), never in a process that serves anything else.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from .. import sqlfile
from ..checks import check_choice, check_finite
from ..queue import jobs, registry
from ..queue.limits import check_kinds, check_lease, to_json

__all__ = ["CUSTOM", "CUSTOM_FILE", "CUSTOM_PARAMETERS", "MUTANTS", "REAL", "VARIANTS",
           "check_custom", "claim_read", "install", "load_custom", "on_shutdown",
           "read_candidates", "set_worker_clock", "try_custom", "write_custom"]

REAL = "real"
MUTANTS = ("no-token-check", "read-then-claim", "reset-on-shutdown", "unfenced-batch",
           "heartbeat-after-expiry", "no-backoff", "finish-unheld", "unlocked-claim",
           "worker-clock", "uncounted-takeover")
CUSTOM = "custom"
VARIANTS = (REAL, *MUTANTS, CUSTOM)
CUSTOM_FILE = "custom.sql"
# statement: (the parameters it must use, the ones it may use), named as in the real
# statements (queue/sql/queries.sql: claim, finish).
CUSTOM_PARAMETERS = {
    "claim": ({"limit", "lease"}, {"limit", "lease", "worker", "kinds"}),
    "finish": ({"job_id"}, {"job_id", "lease_token", "output"}),
}

_QUERIES = sqlfile.load(__package__, "variants.sql")
_CUSTOM = sqlfile.load(__package__, "custom.sql")
_RETURNS = {
    "claim": "the claim must return the claimed rows of jobs, at least id, tenant_id, kind, "
             "payload, attempts, lease_token, locked_until and locked_by: RETURNING * does",
    "finish": "the finish must return id and tenant_id of the job it accepted, nothing for "
              "a report it refused"}
_SLOT = "/* the learner's statement */"
_PARAM = re.compile(r"%\((\w+)\)s")
_LEADING_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.DOTALL)


_REAL = {"queries.sql": jobs.query, "registry.sql": sqlfile.load(jobs.__package__, "registry.sql")}

# Each mutant statement is the real one with its safeguards cut out: it differs from the
# real statement by exactly those words, and follows every other change made to it.
_MUTANT_STATEMENTS = {
    # no-token-check: neither the lease token nor its expiry is checked
    "finish_many_no_token": ("queries.sql", "finish_many", (
        " AND j.lease_token = g.lease_token", "\n      AND j.locked_until > (SELECT now FROM clock)")),
    # unfenced-batch: only the job id is checked, as River's and pgqueuer's batches do
    "finish_many_unfenced": ("queries.sql", "finish_many", (
        " AND j.lease_token = g.lease_token AND j.state = 'running'\n"
        "      AND j.locked_until > (SELECT now FROM clock)",)),
    # heartbeat-after-expiry: a lease that already ran out is renewed too
    "beat_after_expiry": ("registry.sql", "beat", (
        "\n      AND j.locked_until > (SELECT now FROM clock)",)),
    # no-backoff: a pending job is taken whether or not its run_after has come
    "claim_no_backoff": ("queries.sql", "claim", ((
        "AND state = 'pending' AND run_after <= (SELECT now FROM clock)\n"
        "      AND job_rank(run_after, priority) <= (SELECT now FROM clock)\n      AND (%(kinds)s",
        "AND state = 'pending'\n      AND (%(kinds)s"),)),
    # finish-unheld: a job nobody holds (failed by the sweep, cancelled) is taken as held
    "finish_many_unheld": ("queries.sql", "finish_many", ((
        " AND j.lease_token = g.lease_token AND j.state = 'running'\n"
        "      AND j.locked_until > (SELECT now FROM clock)",
        " AND (j.lease_token = g.lease_token OR j.lease_token IS NULL)"),)),
    # unlocked-claim: the candidates are read without row locks (River #1302)
    "claim_unlocked": ("queries.sql", "claim", (
        ("ORDER BY locked_until, id\n    LIMIT (SELECT %(limit)s::integer)\n    FOR UPDATE SKIP LOCKED",
         "ORDER BY locked_until, id\n    LIMIT (SELECT %(limit)s::integer)"),
        ("ORDER BY job_rank(run_after, priority), id\n    LIMIT (SELECT %(limit)s::integer)\n"
         "    FOR UPDATE SKIP LOCKED",
         "ORDER BY job_rank(run_after, priority), id\n    LIMIT (SELECT %(limit)s::integer)"))),
    # worker-clock: the lease ends the lease after the WORKER's now, not the database's
    "claim_worker_clock": ("queries.sql", "claim", ((
        "locked_until = (SELECT now FROM clock) + %(lease)s",
        "locked_until = %(worker_now)s::timestamptz + %(lease)s"),)),
    # uncounted-takeover: taking over an expired lease does not count the attempt
    "claim_uncounted": ("queries.sql", "claim", ((
        "attempts = j.attempts + 1, lease_token = gen_random_uuid()",
        "attempts = j.attempts + CASE WHEN j.state = 'running' THEN 0 ELSE 1 END,\n"
        "        lease_token = gen_random_uuid()"),)),
}


def mutant_sql(name: str) -> str:
    """The text of mutant statement `name`: its real statement with the safeguards cut out.
    A safeguard that is not in the real statement exactly once is an error: the mutant
    would no longer be the real statement minus one safeguard."""
    file, real, cuts = _MUTANT_STATEMENTS[name]
    sql = _REAL[file][real].sql
    for cut in cuts:
        old, new = cut if isinstance(cut, tuple) else (cut, "")
        if sql.count(old) != 1:
            raise RuntimeError(f"mutant {name}: {old.strip()!r} is not once in {real} of "
                               f"queue/sql/{file}; update verify.variants to match it")
        sql = sql.replace(old, new)
    return sql


# The worker's clock minus the database's, in seconds (worker-clock reads it; nothing else
# in the queue reads a worker's clock).
_worker_clock = {"skew": 0.0}


def set_worker_clock(skew: float) -> None:
    """Set how far this process's clock is ahead of the database's (negative: behind),
    in seconds, at most a day either way."""
    skew = check_finite(skew, "skew")
    if abs(skew) > 86_400:
        raise ValueError(f"skew must be within a day (86400 s) either way, got {skew!r}")
    _worker_clock["skew"] = skew


def _claim_many_by(name: str):
    statement = mutant_sql(name)

    def claim_many(conn: psycopg.Connection, limit: int, *, lease: float = 30.0,
                   kinds: Iterable[str] | None = None,
                   worker: str | None = None) -> list[jobs.Claim]:
        worker_now = datetime.now(UTC) + timedelta(seconds=_worker_clock["skew"])
        rows = conn.execute(statement, {
            "limit": limit, "lease": check_lease(lease), "kinds": check_kinds(kinds),
            "worker": worker, "chosen": None, "worker_now": worker_now}).fetchall()
        return [jobs.Claim(*row) for row in rows]
    return claim_many


def _finish_many_by(name: str):
    statement = mutant_sql(name)

    def finish_many(conn: psycopg.Connection, results: Iterable[tuple[jobs.Claim, Any]]) -> list[bool]:
        pairs = list(results)
        if not pairs:
            return []
        ids = [claim.job_id for claim, _ in pairs]
        row = conn.execute(statement, jobs.finish_many_params(
            ids, [claim.lease_token for claim, _ in pairs],
            [to_json(output, "output") for _, output in pairs], pairs[0][0].schema),
            prepare=jobs.BATCH_PLAN).fetchone()
        done = set(row[0])
        return [job_id in done for job_id in ids]
    return finish_many


def _finish_by(finish_many):
    def finish(conn: psycopg.Connection, claim: jobs.Claim, output: Any) -> bool:
        return finish_many(conn, [(claim, output)])[0]
    return finish


def read_candidates(conn: psycopg.Connection, limit: int,
                    kinds: Iterable[str] | None = None) -> list[tuple]:
    """read-then-claim, step 1: the runnable jobs (id, old token, old lease end), unlocked
    (after failing the expired leases with no attempt left, as the real claim does)."""
    conn.execute(_QUERIES["give_up_exhausted"].sql)
    params = {"limit": limit, "kinds": check_kinds(kinds)}
    return conn.execute(_QUERIES["read_candidates"].sql, params).fetchall()


def claim_read(conn: psycopg.Connection, read: list[tuple], *, lease: float,
               worker: str | None = None) -> list[jobs.Claim]:
    """read-then-claim, step 2: take the jobs step 1 read, without checking them again."""
    if not read:
        return []
    rows = conn.execute(_QUERIES["claim_read"].sql, {
        "ids": [r[0] for r in read], "old_tokens": [r[1] for r in read if r[1] is not None],
        "old_untils": [r[2] for r in read if r[1] is not None], "lease": check_lease(lease),
        "worker": worker}).fetchall()
    return [jobs.Claim(*row) for row in rows]


# read-then-claim's race is made certain, not left to timing: a worker's first non-empty
# read waits (up to RENDEZVOUS_WAIT seconds) until a second worker has read too, and only then
# do both claim what they read, which is the same jobs.
RENDEZVOUS_WAIT = 5.0
_RENDEZVOUS_POLL = 0.01
_first_read = threading.Event()


def _rendezvous(conn: psycopg.Connection) -> int:
    """Wait between the read and the claim until another worker of this schema has reached
    this point too (or RENDEZVOUS_WAIT has passed); the number of workers seen there.

    A worker that arrives names its session (application_name, which every session sees in
    pg_stat_activity) and keeps the name: the barrier counts arrivals, so the first to see
    two and go on cannot leave the other waiting for a count that has dropped."""
    # pg_stat_activity keeps 63 bytes of a name: a digest of the schema keeps it short.
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    name = "cq-read-then-claim:" + hashlib.sha1(schema.encode()).hexdigest()[:16]
    conn.execute(_QUERIES["rendezvous_join"].sql, {"name": name})
    deadline = time.monotonic() + RENDEZVOUS_WAIT
    while True:
        conn.execute(_QUERIES["rendezvous_fresh"].sql)
        seen = conn.execute(_QUERIES["rendezvous_count"].sql, {"name": name}).fetchone()[0]
        if seen >= 2 or time.monotonic() >= deadline:
            return seen
        time.sleep(_RENDEZVOUS_POLL)


def _claim_many_read_then_claim(conn: psycopg.Connection, limit: int, *, lease: float = 30.0,
                                kinds: Iterable[str] | None = None,
                                worker: str | None = None) -> list[jobs.Claim]:
    read = read_candidates(conn, limit, kinds)
    if read and not _first_read.is_set():
        _first_read.set()
        _rendezvous(conn)
    return claim_read(conn, read, lease=lease, worker=worker)


def _beat_after_expiry(conn: psycopg.Connection, name: str, claims: Iterable[jobs.Claim],
                       lease: float) -> set:
    claims = list(claims)
    row = conn.execute(mutant_sql("beat_after_expiry"), {
        "name": name, "lease": check_lease(lease), "job_ids": [c.job_id for c in claims],
        "lease_tokens": [c.lease_token for c in claims],
        "schema": claims[0].schema if claims else None}).fetchone()
    return set(row[0])


def check_custom(claim: str, finish: str) -> tuple[str, str]:
    """The learner's two statements, checked as text (stripped of a final `;`): each one
    statement, an UPDATE (or WITH ... UPDATE) with a RETURNING clause, using only the
    parameters of `CUSTOM_PARAMETERS` and at least the required ones. Anything else is a
    TypeError or ValueError that says what is wrong."""
    checked = []
    for name, text in (("claim", claim), ("finish", finish)):
        if not isinstance(text, str):
            raise TypeError(f"the {name} statement must be SQL text (a str), got "
                            f"{type(text).__name__}")
        sql = text.strip().rstrip(";").strip()
        body = _LEADING_COMMENTS.sub("", sql)
        if not body:
            raise ValueError(f"the {name} statement is empty")
        if ";" in _without_literals(sql):
            raise ValueError(f"the {name} statement must be ONE statement (it has a ';' inside)")
        first = body.split(None, 1)[0].upper()
        if first not in ("UPDATE", "WITH"):
            raise ValueError(f"the {name} statement must be an UPDATE of jobs (or WITH ... "
                             f"UPDATE), it starts with {first!r}")
        if not re.search(r"\bRETURNING\b", sql, re.IGNORECASE):
            raise ValueError(f"the {name} statement needs a RETURNING clause: the {name}ed "
                             "rows are what it returns")
        used = set(_PARAM.findall(sql))
        required, allowed = CUSTOM_PARAMETERS[name]
        if used - allowed:
            raise ValueError(f"the {name} statement uses unknown parameters "
                             f"{sorted(used - allowed)}; it may use {sorted(allowed)}")
        if required - used:
            raise ValueError(f"the {name} statement must use the parameters "
                             f"{sorted(required - used)} (as %(name)s)")
        if _SLOT in sql:
            raise ValueError(f"the {name} statement may not contain {_SLOT!r}")
        checked.append(sql)
    return checked[0], checked[1]


def _without_literals(sql: str) -> str:
    """`sql` without its string literals and comments (a ';' in them is no statement end)."""
    return re.sub(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", "", sql, flags=re.DOTALL)


def _wrapped(claim: str, finish: str) -> tuple[str, str]:
    return (_CUSTOM["custom_claim"].sql.replace(_SLOT, claim),
            _CUSTOM["custom_finish"].sql.replace(_SLOT, finish))


def write_custom(folder: str | Path, claim: str, finish: str) -> Path:
    """Check the two statements (`check_custom`) and write them to `folder`/custom.sql,
    where a run's workers of variant `custom` load them; the file's path."""
    claim, finish = check_custom(claim, finish)
    path = Path(folder) / CUSTOM_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("-- The custom variant of a verify run (verify.variants.write_custom).\n\n"
                    f"-- name: claim\n-- the custom claim\n{claim}\n\n"
                    f"-- name: finish\n-- the custom finish\n{finish}\n", encoding="utf-8")
    return path


def load_custom(folder: str | Path) -> tuple[str, str]:
    """The two statements of `folder`/custom.sql, checked again (the file may have been
    edited by hand)."""
    path = Path(folder) / CUSTOM_FILE
    if not path.is_file():
        raise FileNotFoundError(f"variant {CUSTOM!r} needs its statements in {path}: write them "
                                "with verify.variants.write_custom(folder, claim, finish) and "
                                "run in that folder (driver.run(workdir=folder), or "
                                "cachequeue verify --keep folder)")
    queries = sqlfile.parse(path.read_text(encoding="utf-8"), str(path))
    if set(queries) != {"claim", "finish"}:
        raise ValueError(f"{path} must hold exactly the queries claim and finish, "
                         f"it has {sorted(queries)}")
    return check_custom(queries["claim"].sql, queries["finish"].sql)


def try_custom(conn: psycopg.Connection, claim: str, finish: str) -> None:
    """Run both statements once, wrapped as a run runs them, on `conn`'s schema (which has
    the queue's tables), inside a transaction that is rolled back: a statement the server
    refuses, or one that returns the wrong columns, is a ValueError with the server's
    message, before any run starts."""
    claim, finish = check_custom(claim, finish)
    wrapped = dict(zip(("claim", "finish"), _wrapped(claim, finish), strict=True))
    params = {"claim": {"limit": 1, "lease": 1.0, "worker": "try", "kinds": None},
              "finish": {"job_id": -1, "lease_token": "00000000-0000-0000-0000-000000000000",
                         "output": "{}"}}
    for name in ("claim", "finish"):
        try:
            with conn.transaction(force_rollback=True):
                conn.execute(wrapped[name], params[name]).fetchall()
        except psycopg.Error as exc:
            raise ValueError(f"the {name} statement does not run: "
                             f"{type(exc).__name__}: {str(exc).strip()}\n({_RETURNS[name]})") from None


def _custom_functions(folder: str | Path):
    claim_sql, finish_sql = _wrapped(*load_custom(folder))

    def claim_many(conn: psycopg.Connection, limit: int, *, lease: float = 30.0,
                   kinds: Iterable[str] | None = None,
                   worker: str | None = None) -> list[jobs.Claim]:
        rows = conn.execute(claim_sql, {"limit": limit, "lease": check_lease(lease),
                                        "kinds": check_kinds(kinds), "worker": worker}).fetchall()
        # The sweep of expired leases with no attempt left comes AFTER the learner's claim,
        # never before it: before, it would fail those jobs first and hide a claim that
        # forgot the cap (attempts - handbacks < max_attempts). After, it only settles
        # the jobs a correct claim leaves alone.
        conn.execute(_QUERIES["give_up_exhausted"].sql)
        return [jobs.Claim(*row) for row in rows]

    def finish_one(conn: psycopg.Connection, claim: jobs.Claim, output: Any) -> bool:
        row = conn.execute(finish_sql, {"job_id": claim.job_id, "lease_token": claim.lease_token,
                                        "output": to_json(output, "output")}).fetchone()
        return row[0] == 1

    def finish_many(conn: psycopg.Connection,
                    results: Iterable[tuple[jobs.Claim, Any]]) -> list[bool]:
        # One statement per job, each on its own lease (the learner's finish is for one job).
        return [finish_one(conn, claim, output) for claim, output in results]

    return claim_many, finish_one, finish_many


def install(variant: str, *, folder: str | Path | None = None) -> None:
    """Put `variant`'s functions in place in this process (nothing for the real queue);
    `custom` loads its statements from `folder` (the run's folder)."""
    check_choice(variant, "variant", VARIANTS)
    if variant == CUSTOM:
        if folder is None:
            raise ValueError(f"variant {CUSTOM!r} needs the run's folder (its {CUSTOM_FILE})")
        jobs.claim_many, jobs.finish, jobs.finish_many = _custom_functions(folder)
    if variant == "no-token-check":
        jobs.finish_many = _finish_many_by("finish_many_no_token")
        jobs.finish = _finish_by(jobs.finish_many)
    elif variant == "unfenced-batch":
        jobs.finish_many = _finish_many_by("finish_many_unfenced")
    elif variant == "read-then-claim":
        jobs.claim_many = _claim_many_read_then_claim
    elif variant == "heartbeat-after-expiry":
        registry.beat = _beat_after_expiry
    elif variant in _CLAIM_MUTANTS:
        jobs.claim_many = _claim_many_by(_CLAIM_MUTANTS[variant])
    elif variant == "finish-unheld":
        jobs.finish_many = _finish_many_by("finish_many_unheld")
        jobs.finish = _finish_by(jobs.finish_many)


_CLAIM_MUTANTS = {"no-backoff": "claim_no_backoff", "unlocked-claim": "claim_unlocked",
                  "worker-clock": "claim_worker_clock", "uncounted-takeover": "claim_uncounted"}


def on_shutdown(variant: str, conn: psycopg.Connection) -> int:
    """What a stopping worker of `variant` does before it stops; the rows it changed."""
    if variant != "reset-on-shutdown":
        return 0
    return conn.execute(_QUERIES["reset_running"].sql).rowcount
