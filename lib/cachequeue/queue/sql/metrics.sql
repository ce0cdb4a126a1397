-- The queue's operating figures, loaded by cachequeue.queue.metrics. One named query per
-- figure; each returns one row per (tenant, kind) label pair.
--
-- Bounded label cardinality: %(top)s is an array of tenant ids (from `top_tenants`); every
-- other tenant is counted under the label 'other'. NULL keeps every tenant (for a
-- notebook's DataFrame, never for /metrics). %(window)s is the look-back in seconds of the
-- rate and ratio figures; times come from cq_now(), so a manual clock steps them.

-- name: top_tenants
-- The %(limit)s tenants with the most pending and running jobs (ties: the lower tenant id).
SELECT tenant_id
FROM jobs
WHERE state IN ('pending', 'running')
GROUP BY tenant_id
ORDER BY count(*) DESC, tenant_id
LIMIT %(limit)s;

-- name: depth
-- Jobs waiting to run now (pending and due) and jobs running, per tenant label and kind.
SELECT CASE WHEN %(top)s::int[] IS NULL OR tenant_id = ANY (%(top)s::int[])
            THEN tenant_id::text ELSE 'other' END AS tenant,
       kind,
       count(*) FILTER (WHERE state = 'pending' AND run_after <= cq_now()) AS pending,
       count(*) FILTER (WHERE state = 'running') AS running
FROM jobs
WHERE state IN ('pending', 'running')
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: oldest_wait
-- Seconds the oldest due pending job has waited since it became runnable, per tenant label and kind.
SELECT CASE WHEN %(top)s::int[] IS NULL OR tenant_id = ANY (%(top)s::int[])
            THEN tenant_id::text ELSE 'other' END AS tenant,
       kind,
       extract(epoch FROM cq_now() - min(run_after))::float8 AS seconds
FROM jobs
WHERE state = 'pending' AND run_after <= cq_now()
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: claim_rate
-- Attempts started per second over the window (claims), per tenant label and kind.
SELECT CASE WHEN %(top)s::int[] IS NULL OR j.tenant_id = ANY (%(top)s::int[])
            THEN j.tenant_id::text ELSE 'other' END AS tenant,
       j.kind,
       count(*) / %(window)s::float8 AS per_second
FROM job_attempts a
JOIN jobs j ON j.id = a.job_id
WHERE a.started_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: completion_rate
-- Jobs that reached done per second over the window, per tenant label and kind.
SELECT CASE WHEN %(top)s::int[] IS NULL OR tenant_id = ANY (%(top)s::int[])
            THEN tenant_id::text ELSE 'other' END AS tenant,
       kind,
       count(*) / %(window)s::float8 AS per_second
FROM jobs
WHERE state = 'done' AND finished_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: duration
-- p50 and p95 seconds of the attempts that ended 'done' in the window, per tenant label and kind.
SELECT CASE WHEN %(top)s::int[] IS NULL OR j.tenant_id = ANY (%(top)s::int[])
            THEN j.tenant_id::text ELSE 'other' END AS tenant,
       j.kind,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM a.finished_at - a.started_at))::float8 AS p50,
       percentile_cont(0.95) WITHIN GROUP (
           ORDER BY extract(epoch FROM a.finished_at - a.started_at))::float8 AS p95
FROM job_attempts a
JOIN jobs j ON j.id = a.job_id
WHERE a.outcome = 'done'
  AND a.finished_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: retry_ratio
-- Of the attempts that ended in the window, the share that ended in a retry, per tenant label and kind.
SELECT CASE WHEN %(top)s::int[] IS NULL OR j.tenant_id = ANY (%(top)s::int[])
            THEN j.tenant_id::text ELSE 'other' END AS tenant,
       j.kind,
       (count(*) FILTER (WHERE a.outcome = 'retry'))::float8 / count(*) AS ratio,
       count(*) AS attempts
FROM job_attempts a
JOIN jobs j ON j.id = a.job_id
WHERE a.finished_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: failure_ratio
-- Of the jobs that finished (done or failed) in the window, the share that failed, per tenant label and kind.
SELECT CASE WHEN %(top)s::int[] IS NULL OR tenant_id = ANY (%(top)s::int[])
            THEN tenant_id::text ELSE 'other' END AS tenant,
       kind,
       (count(*) FILTER (WHERE state = 'failed'))::float8 / count(*) AS ratio,
       count(*) AS finished
FROM jobs
WHERE state IN ('done', 'failed')
  AND finished_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: repeatable_read
-- First statement of snapshot()'s transaction: every figure reads the same snapshot of the tables.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
