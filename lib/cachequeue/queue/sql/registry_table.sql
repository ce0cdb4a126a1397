-- The workers table and its view (cachequeue.queue.registry). registry.install(conn) applies
-- this file in the connection's schema, and every Worker does so when it first connects
-- (IF NOT EXISTS, under an advisory lock, so workers starting together do not collide).
-- It is not part of db.SCHEMA_FILES: a fresh chapter schema (chapter 00 lists its tables)
-- has only the tables every chapter uses.
SELECT pg_advisory_xact_lock(hashtext('cachequeue.workers.' || current_schema()));

-- Workers that run this schema's jobs (cachequeue.queue.worker.Worker, `cachequeue worker`).
-- A worker inserts its row when it starts (again, same name, when it is restarted),
-- refreshes last_heartbeat with every lease renewal (also while idle), and sets stopped_at
-- when it stops on purpose. A worker that was killed keeps its row: a last_heartbeat far in
-- the past is how an operator sees it. Jobs are held by name (jobs.locked_by).
CREATE TABLE IF NOT EXISTS workers (
    name           text PRIMARY KEY CHECK (name <> ''),
    pid            integer NOT NULL,
    host           text NOT NULL,
    started_at     timestamptz NOT NULL,
    last_heartbeat timestamptz NOT NULL,
    stopped_at     timestamptz
);

-- Who holds what: each worker with the running jobs locked in its name (expired leases
-- included, until another worker takes them over).
CREATE OR REPLACE VIEW worker_status AS
SELECT w.name, w.pid, w.host, w.started_at, w.last_heartbeat, w.stopped_at,
       count(j.id)::integer AS jobs_in_hand,
       coalesce(array_agg(j.id ORDER BY j.id) FILTER (WHERE j.id IS NOT NULL), '{}') AS job_ids
FROM workers w
LEFT JOIN jobs j ON j.state = 'running' AND j.locked_by = w.name
GROUP BY w.name
ORDER BY w.name;
