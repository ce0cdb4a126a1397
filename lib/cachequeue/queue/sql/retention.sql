-- Retention of finished jobs (cachequeue.queue.retention): delete what a policy no longer
-- keeps, one bounded batch per statement, so each batch is its own short transaction.
-- Deleting a job deletes its attempts, its result and its audit rows with it (ON DELETE
-- CASCADE in queue.sql): after the purge, jobs.status() answers None, as for a job that
-- never existed, so the policy must outlive every reader of a result.

-- name: install
-- The index the purge reads: finished jobs by finish time (only finished rows are in it).
SELECT pg_advisory_xact_lock(hashtext('cachequeue.retention.' || current_schema()));
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at, id)
    WHERE state IN ('done', 'failed', 'cancelled');

-- name: purge_batch
-- Delete up to %(batch_size)s finished jobs (of %(states)s) that finished more than %(older_than)s seconds ago, oldest first; returns their ids and states.
-- FOR UPDATE SKIP LOCKED: a job someone holds (an operator's retry moving it back to
-- pending) is skipped, not waited for; the state is read again on the locked row, so a job
-- that became pending or running since the scan is never deleted.
WITH doomed AS (
    SELECT id
    FROM jobs
    WHERE state IN ('done', 'failed', 'cancelled')
      AND state = ANY (%(states)s::job_state[])
      AND finished_at < cq_now() - %(older_than)s::float8 * interval '1 second'
    ORDER BY finished_at, id
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM jobs j
USING doomed d
WHERE j.id = d.id
RETURNING j.id, j.state::text;

-- name: finished_count
-- How many finished jobs (of %(states)s) are older than %(older_than)s seconds: what a purge would delete now.
SELECT count(*)
FROM jobs
WHERE state IN ('done', 'failed', 'cancelled')
  AND state = ANY (%(states)s::job_state[])
  AND finished_at < cq_now() - %(older_than)s::float8 * interval '1 second';
