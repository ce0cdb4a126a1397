-- The sample app's side of the HTTP service (cachequeue.course.app.summaries, .webapp, .stack).

-- name: has_queue
-- Whether the connection's schema already has the queue's tables.
SELECT to_regclass('jobs') IS NOT NULL;

-- name: install
-- Add the kinds the service chapter's workers run beyond queue.sql's own (idempotent).
INSERT INTO job_kinds (kind, description) VALUES
    ('pause', 'wait a given number of seconds, then finish (the service benchmark''s long jobs)')
ON CONFLICT (kind) DO NOTHING;

-- name: listen_sessions
-- Sessions of this database LISTENing on a channel (their last statement is that LISTEN while they wait).
SELECT count(*)
FROM pg_stat_activity
WHERE datname = current_database()
  AND query = 'LISTEN "' || replace(%(channel)s, '"', '""') || '"';

-- name: requested
-- A summary job just submitted in this transaction: its state, and whether this transaction inserted it (its xmin is this transaction's id) rather than found it by its key.
SELECT state::text,
       coalesce(xmin::text = mod(pg_current_xact_id_if_assigned()::text::bigint, 4294967296)::text,
                false) AS created
FROM jobs
WHERE id = %(job_id)s AND tenant_id = %(tenant_id)s;
