-- Stage checkpoints of multi-stage jobs (cachequeue.queue.checkpoints).

-- name: install
-- One row per finished stage of a job, with the stage's output (IF NOT EXISTS: not in a fresh schema).
CREATE TABLE IF NOT EXISTS job_checkpoints (
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    stage       text NOT NULL CHECK (stage <> ''),
    output      jsonb NOT NULL,
    attempt     integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT cq_now(),
    PRIMARY KEY (job_id, stage)
);

-- name: load
-- The stages a job has recorded, in the order they were recorded.
SELECT stage, output
FROM job_checkpoints
WHERE job_id = %(job_id)s
ORDER BY created_at, stage;

-- name: record
-- Record a stage's output, only while this attempt holds its unexpired lease; a stage is recorded once.
INSERT INTO job_checkpoints (job_id, stage, output, attempt)
SELECT j.id, %(stage)s, %(output)s::jsonb, j.attempts
FROM jobs j
WHERE j.id = %(job_id)s AND j.lease_token = %(lease_token)s AND j.state = 'running'
  AND j.locked_until > cq_now()
ON CONFLICT (job_id, stage) DO NOTHING
RETURNING stage;
