-- The simulated day of chapter 08 (cachequeue.course.labs.opsday).

-- name: clear
-- Empty the queue's tables between two runs of the day (results, attempts, audit go with the jobs).
TRUNCATE jobs RESTART IDENTITY CASCADE;
