-- Statements of cachequeue.lockstep, which replays one operation sequence on the in-memory
-- QueueModel and on these tables and compares the two.

-- name: empty_queue
-- Empty the queue tables and restart job ids at 1, so a new sequence starts like a new model.
TRUNCATE job_results, job_attempts, job_audit, jobs RESTART IDENTITY;
