-- Statements of the worker's throughput mode (queue/prefetch.py): jobs claimed ahead into a
-- worker's local queue and handed back unstarted when it stops.

-- name: release_many
-- jobs.release for many held jobs at once (a stopping worker's local queue): each row whose lease this attempt still holds goes back to pending at once, its attempt closed 'released'.
-- Row by row exactly as `release` in queries.sql: fenced by the row's own lease token and
-- expiry, handbacks + 1 (the attempt does not count against max_attempts), failed at the
-- hand-back cap. Returns the lease tokens it moved, with their new states.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
given AS (
    SELECT * FROM unnest(%(job_ids)s::bigint[], %(lease_tokens)s::uuid[]) AS g (job_id, lease_token)
),
held AS (
    SELECT j.id, g.lease_token, j.handbacks + 1 AS handbacks,
           CASE WHEN j.handbacks + 1 >= %(max_handbacks)s::integer THEN 'failed'
                ELSE 'pending' END::job_state AS state
    FROM jobs j JOIN given g ON j.id = g.job_id AND j.lease_token = g.lease_token
    WHERE j.state = 'running' AND j.locked_until > (SELECT now FROM clock)
      AND current_schema() = %(schema)s
    ORDER BY j.id
    FOR UPDATE OF j
),
moved AS (
    UPDATE jobs j
    SET state = h.state, handbacks = h.handbacks,
        run_after = CASE WHEN h.state = 'pending' THEN (SELECT now FROM clock) ELSE j.run_after END,
        finished_at = CASE WHEN h.state = 'failed' THEN (SELECT now FROM clock) END,
        last_error = CASE WHEN h.state = 'failed'
                          THEN 'handed back ' || h.handbacks || ' times, the most allowed: '
                               || 'the handler may outlive the workers'' shutdown timeout '
                               || '(last: ' || %(reason)s::text || ')'
                          ELSE j.last_error END,
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    FROM held h
    WHERE j.id = h.id
    RETURNING h.lease_token, j.state
),
closed AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT now FROM clock), outcome = 'released', error = %(reason)s::text
    FROM held h
    WHERE a.job_id = h.id AND a.lease_token = h.lease_token
)
SELECT coalesce((SELECT array_agg(lease_token ORDER BY lease_token) FROM moved), '{}') AS tokens,
       coalesce((SELECT array_agg(state::text ORDER BY lease_token) FROM moved), '{}') AS states,
       current_schema() AS schema;
