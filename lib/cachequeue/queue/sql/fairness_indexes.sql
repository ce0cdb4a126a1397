-- The two indexes of the fair claim (cachequeue.queue.fairness). fairness.install(conn)
-- applies this file (IF NOT EXISTS, under an advisory lock, so workers starting together do
-- not collide); it is not part of db.SCHEMA_FILES, so a chapter that never claims fairly
-- pays nothing for them on every insert.
SELECT pg_advisory_xact_lock(hashtext('cachequeue.fairness.' || current_schema()));

-- Pending jobs by tenant in claim order (job_rank, as jobs_runnable): the skip scan over
-- tenants and each tenant's next jobs read only this index (run_after, priority and kind are
-- included for the due check, the rank and the kinds filter).
CREATE INDEX IF NOT EXISTS jobs_fair ON jobs (tenant_id, job_rank(run_after, priority), id)
    INCLUDE (run_after, priority, kind) WHERE state = 'pending';
-- Running jobs by tenant: how many a tenant already has, and how many of those still hold
-- a live lease (locked_until), counted from the index alone.
CREATE INDEX IF NOT EXISTS jobs_fair_running ON jobs (tenant_id) INCLUDE (locked_until)
    WHERE state = 'running';
