-- The queue's operating figures, loaded by cachequeue.queue.metrics. One named query per
-- figure; each returns one row per (tenant, kind) label pair.
--
-- Bounded label cardinality: %(top)s is an array of tenant ids (from `top_tenants`); every
-- other tenant is counted under the label 'other' (the function cq_tenant_label, the one
-- place that rule is written; `install` creates it). NULL keeps every tenant (for a
-- notebook's DataFrame, never for /metrics). %(window)s is the look-back in seconds of the
-- rate and ratio figures; times come from cq_now(), so a manual clock steps them.
-- `attempts` and `durations` have no window: they count every attempt so far, the
-- counters and the histogram that /metrics exports (Prometheus computes rates from them).

-- name: install_lock
-- First statement of install()'s transaction: processes installing at once take turns.
SELECT pg_advisory_xact_lock(hashtext('cachequeue.metrics.' || current_schema()));

-- name: installed
-- Whether this schema has the metrics' function already.
SELECT to_regprocedure('cq_tenant_label(integer, integer[])') IS NOT NULL;

-- name: install
-- The label of a tenant: its id if it is one of the top tenants (or top is NULL), else 'other'.
CREATE OR REPLACE FUNCTION cq_tenant_label(tenant_id integer, top integer[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN top IS NULL OR tenant_id = ANY (top) THEN tenant_id::text ELSE 'other' END
$$;

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
SELECT cq_tenant_label(tenant_id, %(top)s::int[]) AS tenant,
       kind,
       count(*) FILTER (WHERE state = 'pending' AND run_after <= cq_now()) AS pending,
       count(*) FILTER (WHERE state = 'running') AS running
FROM jobs
WHERE state IN ('pending', 'running')
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: oldest_wait
-- Seconds the oldest due pending job has waited since it became runnable, per tenant label and kind.
SELECT cq_tenant_label(tenant_id, %(top)s::int[]) AS tenant,
       kind,
       extract(epoch FROM cq_now() - min(run_after))::float8 AS seconds
FROM jobs
WHERE state = 'pending' AND run_after <= cq_now()
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: claim_rate
-- Attempts started per second over the window (claims), per tenant label and kind.
SELECT cq_tenant_label(j.tenant_id, %(top)s::int[]) AS tenant,
       j.kind,
       count(*) / %(window)s::float8 AS per_second
FROM job_attempts a
JOIN jobs j ON j.id = a.job_id
WHERE a.started_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: completion_rate
-- Jobs that reached done per second over the window, per tenant label and kind.
SELECT cq_tenant_label(tenant_id, %(top)s::int[]) AS tenant,
       kind,
       count(*) / %(window)s::float8 AS per_second
FROM jobs
WHERE state = 'done' AND finished_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: duration
-- p50 and p95 seconds of the attempts that ended 'done' in the window, per tenant label and kind.
SELECT cq_tenant_label(j.tenant_id, %(top)s::int[]) AS tenant,
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
SELECT cq_tenant_label(j.tenant_id, %(top)s::int[]) AS tenant,
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
SELECT cq_tenant_label(tenant_id, %(top)s::int[]) AS tenant,
       kind,
       (count(*) FILTER (WHERE state = 'failed'))::float8 / count(*) AS ratio,
       count(*) AS finished
FROM jobs
WHERE state IN ('done', 'failed')
  AND finished_at > cq_now() - %(window)s::float8 * interval '1 second'
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: attempts
-- Every attempt so far, per tenant label, kind and outcome (NULL: still running).
SELECT cq_tenant_label(j.tenant_id, %(top)s::int[]) AS tenant,
       j.kind,
       a.outcome,
       count(*) AS attempts
FROM job_attempts a
JOIN jobs j ON j.id = a.job_id
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3 NULLS FIRST;

-- name: durations
-- Every successful attempt so far per tenant label and kind, counted by duration bucket, with the seconds they took.
-- Bucket i (0-based) holds the durations in (bounds[i-1], bounds[i]]; bucket len(bounds) the rest.
SELECT done.tenant,
       done.kind,
       place.bucket,
       count(*) AS attempts,
       sum(done.seconds)::float8 AS seconds
FROM (SELECT cq_tenant_label(j.tenant_id, %(top)s::int[]) AS tenant,
             j.kind,
             extract(epoch FROM a.finished_at - a.started_at)::float8 AS seconds
      FROM job_attempts a
      JOIN jobs j ON j.id = a.job_id
      WHERE a.outcome = 'done') AS done
CROSS JOIN LATERAL (SELECT count(*)::integer AS bucket
                    FROM unnest(%(bounds)s::float8[]) AS bound
                    WHERE bound < done.seconds) AS place
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;

-- name: repeatable_read
-- First statement of snapshot()'s transaction: every figure reads the same snapshot of the tables.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
