-- Statements of bench/verify_peers.py: our own side-effect table beside a peer's tables,
-- and the snapshots of the peers' own tables (read from outside, before and after a run).

-- name: create_effects
-- The handler's side effect, one row per call that committed; no unique key, so a doubled effect shows.
CREATE TABLE verify_peer_effects (
    n bigserial PRIMARY KEY,
    key text NOT NULL,
    job_id bigint NOT NULL,
    process text NOT NULL,
    pid integer NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- name: effect
-- One side effect, keyed by the peer's job id (committed by the handler before it returns).
INSERT INTO verify_peer_effects (key, job_id, process, pid)
VALUES (%(key)s, %(job_id)s, %(process)s, %(pid)s)
RETURNING extract(epoch FROM applied_at)::float8;

-- name: effects
-- Every side effect that committed.
SELECT key, job_id, process, pid, extract(epoch FROM applied_at)::float8 AS applied_at
FROM verify_peer_effects ORDER BY n;

-- name: procrastinate_jobs
-- procrastinate's job rows, every column.
SELECT to_jsonb(t) FROM procrastinate_jobs t ORDER BY id;

-- name: procrastinate_workers
-- procrastinate's worker rows (its heartbeats), every column.
SELECT to_jsonb(t) FROM procrastinate_workers t ORDER BY id;

-- name: procrastinate_events
-- procrastinate's job events (status changes), every column.
SELECT to_jsonb(t) FROM procrastinate_events t ORDER BY id;

-- name: pgqueuer_jobs
-- pgqueuer's queue rows (jobs not finished; it deletes finished ones), every column.
SELECT to_jsonb(t) FROM pgqueuer t ORDER BY id;

-- name: pgqueuer_log
-- pgqueuer's log of status changes, every column.
SELECT to_jsonb(t) FROM pgqueuer_log t ORDER BY created, job_id;
