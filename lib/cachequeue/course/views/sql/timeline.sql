-- Attempt rows for the per-worker timeline (cachequeue.course.views.timeline).

-- name: attempts
-- Attempts started since an instant, with worker, times, outcome and any refused late report.
SELECT job_id, attempt, worker, started_at, finished_at, outcome, rejected_report, rejected_at
FROM job_attempts
WHERE started_at >= %(since)s
ORDER BY started_at, job_id, attempt;
