-- Statements of the workers table (cachequeue.queue.registry): a worker's row, and the
-- heartbeat that renews its leases.
-- The job statements themselves (claim, finish, fail, release) are in queries.sql.

-- name: register
-- Insert or refresh this worker's row; a restarted worker of the same name starts afresh.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
)
INSERT INTO workers AS w (name, pid, host, started_at, last_heartbeat, stopped_at)
SELECT %(name)s, %(pid)s, %(host)s, now, now, NULL
FROM clock
ON CONFLICT (name) DO UPDATE
SET pid = excluded.pid, host = excluded.host, last_heartbeat = excluded.last_heartbeat,
    stopped_at = NULL,
    -- The same process coming back after a lost connection keeps its start time.
    started_at = CASE WHEN w.pid = excluded.pid AND w.host = excluded.host
                      THEN w.started_at ELSE excluded.started_at END;

-- name: beat
-- Renew every lease this worker still holds and record its heartbeat; return the lease tokens still held.
-- One statement for all of the worker's jobs, however many run at once. A lease that
-- expired or was taken over is not renewed: the caller learns it lost that job.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
renewed AS (
    UPDATE jobs j
    SET locked_until = (SELECT now FROM clock) + %(lease)s::float8 * interval '1 second'
    FROM unnest(%(job_ids)s::bigint[], %(lease_tokens)s::uuid[]) AS g (job_id, lease_token)
    WHERE j.id = g.job_id AND j.lease_token = g.lease_token AND j.state = 'running'
      AND j.locked_until > (SELECT now FROM clock) AND current_schema() = %(schema)s
    RETURNING j.lease_token
),
seen AS (
    UPDATE workers
    SET last_heartbeat = (SELECT now FROM clock)
    WHERE name = %(name)s
)
SELECT coalesce((SELECT array_agg(lease_token) FROM renewed), '{}') AS held,
       current_schema() AS schema;

-- name: deregister
-- Mark this worker as stopped on purpose (its row stays for the record).
UPDATE workers
SET stopped_at = cq_now(), last_heartbeat = cq_now()
WHERE name = %(name)s AND pid = %(pid)s;

-- name: status
-- Who holds what: every worker with the running jobs locked in its name.
SELECT name, pid, host, started_at, last_heartbeat, stopped_at, jobs_in_hand, job_ids
FROM worker_status
ORDER BY name;
