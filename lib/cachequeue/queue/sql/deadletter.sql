-- Dead letters (cachequeue.queue.deadletter): failed jobs, filtered. The filter is written
-- here only: a bulk retry retries exactly the rows this query listed, with the queue's own
-- retry statement (queries.sql). A real run lists again: a failure that matches after the
-- dry run is retried too, unless the filter's `until` ends at the dry run (chapter 09).
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
