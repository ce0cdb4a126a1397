"""The custom variant (the lab of chapter 06) on a real server: the learner's statements,
wrapped, do the real statements' bookkeeping; a statement the server refuses is caught
before a run; and a seeded run catches a finish without the lease check."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cachequeue import db
from cachequeue.embedded import Server
from cachequeue.queue import jobs
from cachequeue.verify import driver, variants

T0 = datetime.now(UTC) + timedelta(hours=1)  # after every submit's run_after

CLAIM = """
UPDATE jobs
SET state = 'running', attempts = attempts + 1, lease_token = gen_random_uuid(),
    locked_until = cq_now() + %(lease)s * interval '1 second', locked_by = %(worker)s
WHERE id IN (SELECT id FROM jobs
             WHERE state = 'pending' AND run_after <= cq_now()
                OR state = 'running' AND locked_until <= cq_now()
                   AND attempts - handbacks < max_attempts
             ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING *
"""
FINISH = """
UPDATE jobs
SET state = 'done', finished_at = cq_now(), lease_token = NULL, locked_until = NULL,
    locked_by = NULL
WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running'
  AND locked_until > cq_now()
RETURNING id, tenant_id
"""
NO_EXPIRY = FINISH.replace("\n  AND locked_until > cq_now()", "")
NO_TOKEN = NO_EXPIRY.replace(" AND lease_token = %(lease_token)s", "")


@pytest.fixture
def custom(monkeypatch, tmp_path):
    """Install a custom claim and finish in this test process (the real functions come
    back afterwards)."""
    for name in ("finish", "finish_many", "claim_many"):
        monkeypatch.setattr(jobs, name, getattr(jobs, name))

    def install(claim: str, finish: str) -> None:
        variants.write_custom(tmp_path, claim, finish)
        variants.install(variants.CUSTOM, folder=tmp_path)
    return install


def at(conn, seconds):
    db.set_clock(conn, T0 + timedelta(seconds=seconds))


def test_the_wrapped_statements_keep_the_attempt_and_result_rows(conn, schema, custom):
    custom(CLAIM, FINISH)
    job = jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    at(conn, 0)
    old = jobs.claim(conn, lease=10, worker="a")
    assert (old.job_id, old.attempt, old.worker, old.schema) == (job, 1, "a", schema)
    at(conn, 20)  # a's lease ran out: b takes the job over
    new = jobs.claim(conn, lease=10, worker="b")
    assert (new.job_id, new.attempt) == (job, 2)
    assert jobs.finish(conn, old, {"by": "a"}) is False  # outdated token: refused
    assert jobs.finish_many(conn, [(new, {"by": "b"})]) == [True]
    first, second = jobs.history(conn, job)
    assert (first["outcome"], first["rejected_report"]) == ("expired", "finish")
    assert first["finished_at"] == old.locked_until  # it ended when its lease did
    assert second["outcome"] == "done"
    assert conn.execute("SELECT output, lease_token FROM job_results WHERE job_id = %s",
                        [job]).fetchone() == ({"by": "b"}, new.lease_token)


def test_a_finish_without_the_expiry_check_accepts_an_expired_lease(conn, custom):
    jobs.submit(conn, tenant_id=1, kind="noop", payload={})
    at(conn, 0)
    custom(CLAIM, FINISH)
    claim = jobs.claim(conn, lease=10, worker="a")
    at(conn, 15)  # expired, nobody took it over yet
    assert jobs.finish(conn, claim, 1) is False
    custom(CLAIM, NO_EXPIRY)
    assert jobs.finish(conn, claim, 1) is True


def test_a_statement_the_server_refuses_is_caught_before_a_run(conn):
    variants.try_custom(conn, CLAIM, FINISH)  # the good ones run (and are rolled back)
    assert conn.execute("SELECT count(*) FROM job_attempts").fetchone()[0] == 0
    with pytest.raises(ValueError, match=r"finish statement does not run: UndefinedColumn"):
        variants.try_custom(conn, CLAIM, FINISH.replace("tenant_id", "tenant"))
    with pytest.raises(ValueError, match=r"(?s)claim statement does not run: .*RETURNING \* does"):
        variants.try_custom(conn, CLAIM.replace("RETURNING *", "RETURNING id"), FINISH)


@pytest.fixture(scope="module")
def server():
    with Server.private() as private:
        yield private


@pytest.mark.parametrize(("finish", "caught"), [(FINISH, False), (NO_TOKEN, True)])
def test_a_seeded_run_passes_the_good_finish_and_catches_the_one_without_a_token(
        finish, caught, server, tmp_path):
    variants.write_custom(tmp_path, CLAIM, finish)
    # A fault exposes the wrong finish only when it lands on a job in flight, which one seed
    # does not always manage; the good finish runs once and must pass.
    for seed in (1, 2, 3):
        result = driver.run(variant=variants.CUSTOM, seed=seed, jobs=12, workers=3,
                            faults=("pause", "blackhole"), per_kind=2, time_limit=30,
                            workdir=tmp_path, server=server)
        found = {v["check"] for v in result["violations"]}
        assert result["faults_injected"]["pause"] == 2, result["faults_injected"]
        if not caught or found:
            break
    if caught:
        assert found & {"stale-accepted", "one-result"}, result["violations"]
    else:
        # Every job settled. Some fail for good when the faults use up their three attempts
        # (item 5 keeps the attempts within that cap): two pauses aim at long jobs' holders
        # and two blackholes expire every lease in flight, one fault at a time (seen: 4 of 12
        # on two loaded cores). A finish that refused good reports would leave most failed.
        assert found == set() and set(result["states"]) <= {"done", "failed", "cancelled"}, result
        assert result["states"].get("done", 0) >= 12 // 2, result["states"]
