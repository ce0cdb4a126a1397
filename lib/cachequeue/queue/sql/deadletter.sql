-- Dead letters (cachequeue.queue.deadletter): failed jobs, filtered, and their audited bulk retry.
-- A filter is any of: kind, error class (the exception type that starts last_error, e.g.
-- 'TimeoutError'), a time range on finished_at, a tenant. NULL means "any".

-- name: failed
-- Failed jobs that match the filter, oldest failure first, with their error class.
SELECT id AS job_id, tenant_id, kind, attempts, max_attempts, last_error,
       split_part(last_error, ':', 1) AS error_class, finished_at
FROM jobs
WHERE state = 'failed'
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
  AND (%(error_class)s::text IS NULL OR split_part(last_error, ':', 1) = %(error_class)s::text)
  AND (%(since)s::timestamptz IS NULL OR finished_at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR finished_at < %(until)s::timestamptz)
  AND (%(tenant_id)s::integer IS NULL OR tenant_id = %(tenant_id)s::integer)
ORDER BY finished_at, id
LIMIT %(limit)s;

-- name: retry_matching
-- Put the failed jobs that match the filter back to pending (at most %(limit)s), one audit row each.
-- The same filter as `failed`, in the same order, so a dry run shows exactly these jobs.
-- Each job gets its original attempt budget again, as jobs.retry() gives it.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
target AS (
    SELECT id, tenant_id, attempts, max_attempts, last_error,
           coalesce((SELECT (a.detail ->> 'added_attempts')::integer FROM job_audit a
                     WHERE a.job_id = jobs.id AND a.action = 'retry'
                     ORDER BY a.id LIMIT 1),
                    max_attempts) AS added
    FROM jobs
    WHERE state = 'failed'
      AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
      AND (%(error_class)s::text IS NULL OR split_part(last_error, ':', 1) = %(error_class)s::text)
      AND (%(since)s::timestamptz IS NULL OR finished_at >= %(since)s::timestamptz)
      AND (%(until)s::timestamptz IS NULL OR finished_at < %(until)s::timestamptz)
      AND (%(tenant_id)s::integer IS NULL OR tenant_id = %(tenant_id)s::integer)
    ORDER BY finished_at, id
    LIMIT %(limit)s
    FOR UPDATE
),
moved AS (
    UPDATE jobs j
    SET state = 'pending', max_attempts = t.attempts + t.added,
        run_after = (SELECT now FROM clock), finished_at = NULL
    FROM target t
    WHERE j.id = t.id
    RETURNING j.id
),
audited AS (
    INSERT INTO job_audit (job_id, tenant_id, actor, action, reason, at, detail)
    SELECT id, tenant_id, %(actor)s, 'retry', %(reason)s, (SELECT now FROM clock),
           jsonb_build_object('previous_attempts', attempts,
                              'previous_max_attempts', max_attempts,
                              'added_attempts', added,
                              'last_error', last_error,
                              'bulk_filter', %(filter)s::jsonb)
    FROM target
)
SELECT coalesce(array_agg(id ORDER BY id), '{}') AS retried FROM moved;
