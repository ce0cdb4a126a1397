-- Statements of bench/api_latency.py that are not the queue's own.

-- name: waiting_pauses
-- The 5-second jobs still pending or running (cancelled between runs, so each run starts level).
SELECT id FROM jobs WHERE kind = 'pause' AND state IN ('pending', 'running') ORDER BY id;

-- name: job_count
-- All jobs of the schema.
SELECT count(*) FROM jobs;
