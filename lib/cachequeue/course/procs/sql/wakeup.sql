-- Submit-to-start latency on the database clock (cachequeue.course.procs.wakeup).

-- name: start_latency
-- Seconds from a job's insert to the start of its first attempt, for the given jobs.
SELECT j.id AS job_id,
       extract(epoch FROM a.started_at - j.created_at)::float8 AS seconds
FROM jobs j
JOIN job_attempts a ON a.job_id = j.id AND a.attempt = 1
WHERE j.id = ANY (%(job_ids)s::bigint[])
ORDER BY j.id;
