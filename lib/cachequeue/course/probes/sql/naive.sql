-- Anti-patterns that the chapter 03 notebook runs on purpose to show why they are wrong,
-- and one probe. The real queue's statements live in queries.sql; cachequeue.queue.jobs uses none
-- of these.

-- name: naive_pick
-- Step 1 of the naive claim: read the oldest due pending job, without locking it.
SELECT id, attempts
FROM jobs
WHERE state = 'pending' AND run_after <= cq_now()
ORDER BY id
LIMIT 1;

-- name: naive_take
-- Step 2 of the naive claim: mark the job read in step 1 as ours (deliberately wrong).
-- Nothing re-checks that the job is still pending: a second worker that read the same
-- row in step 1 takes it as well.
UPDATE jobs
SET state = 'running',
    attempts = attempts + 1,
    lease_token = gen_random_uuid(),
    locked_by = %(worker)s,
    locked_until = cq_now() + make_interval(secs => %(lease)s)
WHERE id = %(job_id)s
RETURNING lease_token;

-- name: naive_take_pending
-- Step 2 with the state re-checked: the UPDATE changes the row only while it is still
-- pending. A second worker that read the same row in step 1 changes nothing (no row back):
-- the double claim is gone, but the loser has to start over from step 1.
UPDATE jobs
SET state = 'running',
    attempts = attempts + 1,
    lease_token = gen_random_uuid(),
    locked_by = %(worker)s,
    locked_until = cq_now() + make_interval(secs => %(lease)s)
WHERE id = %(job_id)s AND state = 'pending'
RETURNING lease_token;

-- name: count_pending
-- A report: how many jobs wait to run. Reads every pending row, locked or not.
SELECT count(*) AS pending
FROM jobs
WHERE state = 'pending';

-- name: count_pending_skip_locked
-- The same report written with SKIP LOCKED (deliberately wrong).
-- Rows another transaction holds are left out, so the count is too small whenever a
-- worker is busy. Right for claiming, wrong for reports.
SELECT count(*) AS pending
FROM (
    SELECT id FROM jobs WHERE state = 'pending' FOR UPDATE SKIP LOCKED
) AS unlocked;

-- name: session_state
-- What pg_stat_activity says a backend is doing: 'idle', 'active', 'idle in transaction'.
SELECT state FROM pg_stat_activity WHERE pid = %(pid)s;
