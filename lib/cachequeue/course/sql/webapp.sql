-- The sample app's side of the HTTP service (cachequeue.course.summaries, .webapp, .stack).

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
