-- The simulated day of chapter 08 (cachequeue.course.opsday).

-- name: clear
-- Empty the queue's tables between two runs of the day (results, attempts, audit go with the jobs).
TRUNCATE jobs RESTART IDENTITY CASCADE;

-- name: lock_jobs
-- What a schema migration does: hold the jobs table exclusively (until the transaction ends).
LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE;
