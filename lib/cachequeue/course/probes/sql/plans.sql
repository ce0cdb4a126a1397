-- Bulk rows for looking at the claim's cost (notebook 03, tests, bench/claim_cost.py), and
-- the table statistics the planner needs afterwards. Run by cachequeue.course.probes.plans.

-- name: fill_finished
-- Add %(count)s done no-op jobs spread over %(tenants)s tenants, as years of history would leave them.
INSERT INTO jobs (tenant_id, kind, payload, state, attempts, finished_at)
SELECT n %% %(tenants)s, 'noop', '{}', 'done', 1, cq_now()
FROM generate_series(1, %(count)s) AS n;

-- name: fill_pending
-- Add %(count)s pending no-op jobs, due now, dealt round-robin to tenants %(tenant_id)s .. %(tenant_id)s + %(tenants)s - 1.
INSERT INTO jobs (tenant_id, kind, payload)
SELECT %(tenant_id)s + (n - 1) %% %(tenants)s, 'noop', '{}'
FROM generate_series(1, %(count)s) AS n;

-- name: analyze_jobs
-- Refresh the planner's statistics of the jobs table (what autovacuum does soon after a bulk load).
ANALYZE jobs;

-- name: vacuum_analyze_jobs
-- VACUUM too: it also marks pages all-visible, which index-only scans rely on.
VACUUM (ANALYZE) jobs;

-- name: jobs_table_size
-- The jobs table with its indexes and TOAST, in human units.
SELECT pg_size_pretty(pg_total_relation_size('jobs'));

-- name: jobs_heap_pages
-- The pages of the jobs table itself (no indexes): what a scan of every row would read.
SELECT (pg_relation_size('jobs') / current_setting('block_size')::int)::int;
