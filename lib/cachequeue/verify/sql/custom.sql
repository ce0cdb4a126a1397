-- A learner's own claim and finish (verify.variants, variant "custom"), each wrapped in the
-- bookkeeping the real statements of queue/sql/queries.sql also do, so that the real Worker
-- runs them unchanged and the checker reads the same tables. The learner's statement (an
-- UPDATE of jobs ... RETURNING, or a WITH ... UPDATE) takes the place of the comment
-- /* the learner's statement */; it decides which jobs are taken and which reports are
-- accepted, and nothing else here does.

-- name: custom_claim
-- custom: the learner's claim (UPDATE jobs ... RETURNING the claimed rows), with the attempt rows the real claim keeps.
WITH before AS (
    -- The statement's snapshot of the jobs: the lease each claimed job had before.
    SELECT id, lease_token AS old_token, locked_until AS old_until
    FROM jobs
    WHERE state = 'running'
),
claimed AS (
    /* the learner's statement */
),
closed AS (
    -- The previous holder's attempt ends when its lease did (or now, if it had none).
    UPDATE job_attempts a
    SET finished_at = coalesce(b.old_until, cq_now()), outcome = 'expired',
        error = 'lease expired'
    FROM claimed c
    LEFT JOIN before b ON b.id = c.id
    WHERE a.job_id = c.id AND a.outcome IS NULL AND a.lease_token IS DISTINCT FROM c.lease_token
),
opened AS (
    INSERT INTO job_attempts (job_id, attempt, lease_token, worker, started_at)
    SELECT id, attempts, lease_token, locked_by, cq_now()
    FROM claimed
)
SELECT id AS job_id, tenant_id, kind, payload, attempts AS attempt, lease_token,
       locked_until, locked_by AS worker, current_schema() AS schema
FROM claimed
ORDER BY id;

-- name: custom_finish
-- custom: the learner's finish (UPDATE jobs ... RETURNING id, tenant_id of the job it accepted), with the result row and the attempt row the real finish keeps.
WITH owned AS (
    /* the learner's statement */
),
stored AS (
    INSERT INTO job_results (job_id, tenant_id, output, lease_token, created_at)
    SELECT id, tenant_id, %(output)s::jsonb, %(lease_token)s::uuid, cq_now()
    FROM owned
    ON CONFLICT (job_id) DO NOTHING
),
closed AS (
    UPDATE job_attempts
    SET finished_at = cq_now(), outcome = 'done'
    WHERE lease_token = %(lease_token)s::uuid AND job_id IN (SELECT id FROM owned)
),
refused AS (
    UPDATE job_attempts
    SET rejected_report = 'finish', rejected_at = cq_now()
    WHERE job_id = %(job_id)s::bigint AND lease_token = %(lease_token)s::uuid
      AND NOT EXISTS (SELECT 1 FROM owned) AND outcome IS DISTINCT FROM 'done'
      AND rejected_report IS NULL
)
SELECT (SELECT count(*) FROM owned) AS finished, current_schema() AS schema;
