-- Locks on the jobs table and what they stop (cachequeue.course.probes.tablelocks, chapter 08).

-- name: lock_jobs
-- What a schema migration does: hold the jobs table exclusively (until the transaction ends).
LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE;

-- name: lock_jobs_share
-- What CREATE INDEX (without CONCURRENTLY) holds: SHARE mode, until the transaction ends: reads go on, writes wait.
LOCK TABLE jobs IN SHARE MODE;

-- name: lock_next_job
-- The claim's first step, as the readiness probe used to run it: lock the next runnable job, skipping locked ones.
SELECT id
FROM jobs
WHERE state = 'pending' AND run_after <= cq_now()
ORDER BY run_after, id
LIMIT 1
FOR UPDATE SKIP LOCKED;

-- name: lock_timeout
-- How long this session's statements wait for a lock before they give up (milliseconds).
SELECT set_config('lock_timeout', %(ms)s, false);
