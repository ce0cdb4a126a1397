-- Statements of bench/queue_throughput.py that are not the queue's own (those come from
-- cachequeue.queue.jobs.query): the smallest possible claim and finish, and the checks
-- that count what each system left undone.

-- name: minimal_claim
-- The smallest claim: no attempt rows, no expired-lease pass, commit without waiting for the disk.
WITH async AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true))
UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_token = gen_random_uuid(),
       locked_until = now() + interval '30 seconds'
WHERE id IN (SELECT id FROM jobs WHERE state = 'pending' AND run_after <= now()
             ORDER BY run_after, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
  AND (SELECT true FROM async)
RETURNING id, lease_token;

-- name: minimal_finish
-- The smallest finish: the lease check and the state change, no result row.
UPDATE jobs SET state = 'done', finished_at = now(), lease_token = NULL, locked_until = NULL
WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running';

-- name: fill_cq
-- n pending no-op jobs for our queue.
INSERT INTO jobs (tenant_id, kind, payload)
SELECT 1, 'noop', '{}' FROM generate_series(1, %(n)s);

-- name: analyze
-- Fresh statistics for every table of the schema.
ANALYZE;

-- name: clock
-- The database clock, read when the workers are released.
SELECT clock_timestamp();

-- name: check_cq
-- Jobs not completed (must be 0), and when the last completion was recorded.
SELECT count(*) FILTER (WHERE state <> 'done'), max(finished_at) FROM jobs;

-- name: check_procrastinate
-- The same for procrastinate's tables.
SELECT (SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'),
       (SELECT max(at) FROM procrastinate_events WHERE type = 'succeeded');

-- name: check_pgqueuer
-- The same for pgqueuer's tables (it deletes finished jobs and logs them).
SELECT (SELECT count(*) FROM pgqueuer),
       (SELECT max(created) FROM pgqueuer_log WHERE status = 'successful');
