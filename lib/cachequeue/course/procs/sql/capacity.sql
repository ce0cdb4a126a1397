-- The capacity lab of chapter 08 (cachequeue.course.procs.capacity).

-- name: waiting_for_jobs
-- How many sessions wait for a lock on this schema's jobs table (requests that hold a pooled connection and wait).
SELECT count(*)::integer
FROM pg_locks
WHERE locktype = 'relation' AND relation = 'jobs'::regclass AND NOT granted;
