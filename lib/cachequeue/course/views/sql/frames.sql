-- Read-only views of the queue tables for the notebooks' tables and plots (cachequeue.course.views.frames).

-- name: jobs_table
-- Every job with its state, attempts and last error, and whether a result row exists.
SELECT j.id AS job_id, j.tenant_id, j.kind, j.state::text AS state, j.attempts,
       j.max_attempts, j.run_after, j.locked_until, j.finished_at, j.last_error,
       r.job_id IS NOT NULL AS has_result
FROM jobs j
LEFT JOIN job_results r ON r.job_id = j.id
ORDER BY j.id;

-- name: state_counts
-- How many jobs are in each state (every state listed, zero included).
SELECT s.state::text AS state, count(j.id) AS jobs
FROM unnest(enum_range(NULL::job_state)) AS s(state)
LEFT JOIN jobs j ON j.state = s.state
GROUP BY s.state
ORDER BY s.state;
