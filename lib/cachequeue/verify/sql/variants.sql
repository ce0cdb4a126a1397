-- The mutants of the queue (verify.variants) that are more than the real statement with a
-- safeguard cut out (those, no-token-check, unfenced-batch and heartbeat-after-expiry, are
-- made from the real text by verify.variants.mutant_sql). They return what the real
-- statements return, so the real Worker runs them unchanged.

-- name: give_up_exhausted
-- read-then-claim, step 0: fail the expired leases with no attempt left, as the real claim does on its way.
WITH exhausted AS (
    UPDATE jobs
    SET state = 'failed', finished_at = cq_now(),
        last_error = 'lease expired on the last attempt (' || (attempts - handbacks)
                     || ' of ' || max_attempts || ')',
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    FROM (SELECT id AS old_id, lease_token AS old_token, locked_until AS old_until
          FROM jobs
          WHERE state = 'running' AND locked_until <= cq_now()
            AND attempts - handbacks >= max_attempts
          FOR UPDATE SKIP LOCKED) old
    WHERE jobs.id = old.old_id
    RETURNING old.old_token, old.old_until
)
UPDATE job_attempts a
SET finished_at = e.old_until, outcome = 'expired', error = 'lease expired'
FROM exhausted e
WHERE a.lease_token = e.old_token;

-- name: read_candidates
-- read-then-claim, step 1: read the runnable jobs without locking them (no FOR UPDATE SKIP LOCKED).
SELECT id, lease_token AS old_token, locked_until AS old_until
FROM jobs
WHERE (state = 'pending' AND run_after <= cq_now()
       OR state = 'running' AND locked_until <= cq_now() AND attempts - handbacks < max_attempts)
  AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s::text[]))
ORDER BY run_after, id
LIMIT %(limit)s;

-- name: rendezvous_join
-- read-then-claim, the race made certain: a worker that has read its first jobs names its
-- session (application_name, seen by every session in pg_stat_activity) for the rest of it.
SELECT set_config('application_name', %(name)s, false);

-- name: rendezvous_fresh
-- read-then-claim: forget this transaction's copy of pg_stat_activity (kept until its end).
SELECT pg_stat_clear_snapshot();

-- name: rendezvous_count
-- read-then-claim: how many workers are waiting between their read and their claim now.
SELECT count(*) FROM pg_stat_activity WHERE application_name = %(name)s;

-- name: claim_read
-- read-then-claim, step 2: take the jobs read in step 1 without checking they are still runnable.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
claimed AS (
    UPDATE jobs j
    SET state = 'running', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        locked_until = (SELECT now FROM clock) + %(lease)s::float8 * interval '1 second',
        locked_by = %(worker)s::text
    WHERE j.id = ANY (%(ids)s::bigint[])
    RETURNING j.id, j.tenant_id, j.kind, j.payload, j.attempts, j.lease_token,
              j.locked_until, j.locked_by
),
closed AS (
    UPDATE job_attempts a
    SET finished_at = g.old_until, outcome = 'expired', error = 'lease expired'
    FROM unnest(%(old_tokens)s::uuid[], %(old_untils)s::timestamptz[]) AS g (old_token, old_until)
    WHERE a.lease_token = g.old_token AND a.outcome IS NULL
),
opened AS (
    INSERT INTO job_attempts (job_id, attempt, lease_token, worker, started_at)
    SELECT id, attempts, lease_token, locked_by, (SELECT now FROM clock)
    FROM claimed
)
SELECT id AS job_id, tenant_id, kind, payload, attempts AS attempt, lease_token,
       locked_until, locked_by AS worker, current_schema() AS schema
FROM claimed
ORDER BY id;

-- name: reset_running
-- reset-on-shutdown: a stopping worker sets EVERY running job back to pending, its own and everyone else's.
-- (Those on their last attempt are left alone: pending with no attempt left, the claim's
-- attempts_capped constraint would refuse every claim and stop the whole run.)
UPDATE jobs
SET state = 'pending', run_after = cq_now(), lease_token = NULL, locked_until = NULL,
    locked_by = NULL
WHERE state = 'running' AND attempts - handbacks < max_attempts;
