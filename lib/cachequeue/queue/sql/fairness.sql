-- The fair claim (cachequeue.queue.fairness). Needs the indexes of fairness_indexes.sql.

-- name: claim_fair
-- Claim up to %(limit)s runnable jobs, expired leases first, then pending jobs in fair order: fewest running first.
-- Fair order: a tenant's k-th pending job would be its (running + k)-th job in flight, and
-- the claim takes the jobs with the smallest such number first (ties: oldest run_after).
-- So a tenant with 10,000 queued jobs and 8 running waits behind a tenant with 10 queued
-- and none running, and no tenant gets more than %(tenant_cap)s running jobs (NULL: no cap).
-- The cap is read from the statement's snapshot: claims that run at the same instant may
-- each see the same free slot, so it can be exceeded by the number of concurrent claimers
-- minus one. The cost: one index probe per tenant with pending jobs (the skip scan), so a
-- claim reads O(tenants) index entries where the plain claim reads O(limit).
WITH RECURSIVE clock AS MATERIALIZED (
    SELECT cq_now() AS now,
           set_config('synchronous_commit', 'off', true) AS commit_mode
),
-- Expired leases with no attempts left are failed here, never run again. Bounded per call.
exhausted AS (
    SELECT id, lease_token AS old_token, locked_until AS old_until
    FROM jobs
    WHERE state = 'running' AND locked_until <= (SELECT now FROM clock)
      AND attempts >= max_attempts
    ORDER BY locked_until, id
    LIMIT 100
    FOR UPDATE SKIP LOCKED
),
gave_up AS (
    UPDATE jobs j
    SET state = 'failed', finished_at = (SELECT now FROM clock),
        last_error = 'lease expired on the last attempt (' || j.attempts || ' of '
                     || j.max_attempts || ')',
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    WHERE j.id = ANY (ARRAY(SELECT id FROM exhausted))
),
-- Served by the partial index jobs_lease_expiry: only running rows, oldest expiry first.
expired AS (
    SELECT id, lease_token AS old_token, locked_until AS old_until
    FROM jobs
    WHERE state = 'running' AND locked_until <= (SELECT now FROM clock)
      AND attempts < max_attempts
      AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s::text[]))
    ORDER BY locked_until, id
    LIMIT (SELECT %(limit)s::integer)
    FOR UPDATE SKIP LOCKED
),
-- Every tenant with a pending job: a skip scan over jobs_fair, one probe per tenant.
tenants AS (
    (SELECT tenant_id FROM jobs WHERE state = 'pending' ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.tenant_id FROM jobs j
            WHERE j.state = 'pending' AND j.tenant_id > t.tenant_id
            ORDER BY j.tenant_id LIMIT 1)
    FROM tenants t
    WHERE t.tenant_id IS NOT NULL
),
-- How many jobs each of them runs now (index jobs_fair_running), and how many it may add.
load AS (
    SELECT t.tenant_id, r.running,
           CASE WHEN %(tenant_cap)s::integer IS NULL THEN %(limit)s::integer
                ELSE greatest(0, least(%(limit)s::integer, %(tenant_cap)s::integer - r.running))
           END AS room
    FROM tenants t
    CROSS JOIN LATERAL (SELECT count(*)::integer AS running FROM jobs r
                        WHERE r.state = 'running' AND r.tenant_id = t.tenant_id) r
    WHERE t.tenant_id IS NOT NULL
),
-- Each tenant's next due jobs (at most its room), numbered by the place they would take.
candidates AS (
    SELECT c.id, c.run_after, l.running + c.k AS place
    FROM load l
    CROSS JOIN LATERAL (
        SELECT j.id, j.run_after, row_number() OVER (ORDER BY j.run_after, j.id) AS k
        FROM jobs j
        WHERE j.state = 'pending' AND j.tenant_id = l.tenant_id
          AND j.run_after <= (SELECT now FROM clock)
          AND (%(kinds)s::text[] IS NULL OR j.kind = ANY (%(kinds)s::text[]))
        ORDER BY j.run_after, j.id
        LIMIT l.room
    ) c
),
-- Lock the best places; SKIP LOCKED passes over jobs another claim holds, and the WHERE
-- clause is re-checked on the newest version of each row it locks.
fresh AS (
    SELECT j.id, NULL::uuid AS old_token, NULL::timestamptz AS old_until
    FROM candidates c
    JOIN jobs j ON j.id = c.id
    WHERE j.state = 'pending' AND j.run_after <= (SELECT now FROM clock)
    ORDER BY c.place, c.run_after, c.id
    LIMIT (SELECT %(limit)s::integer)
    FOR UPDATE OF j SKIP LOCKED
),
-- CTEs are read lazily: fresh is only read (and its rows only locked) for the places
-- that expired leases did not fill.
picked AS (
    SELECT * FROM expired
    UNION ALL
    SELECT * FROM fresh
    LIMIT (SELECT %(limit)s::integer)
),
claimed AS (
    UPDATE jobs j
    SET state = 'running', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        locked_until = (SELECT now FROM clock) + %(lease)s::float8 * interval '1 second',
        locked_by = %(worker)s::text
    WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
    RETURNING j.id, j.tenant_id, j.kind, j.payload, j.attempts, j.lease_token,
              j.locked_until, j.locked_by
),
-- The previous holder's attempt ends when its lease did.
ended AS (
    SELECT old_token, old_until FROM picked WHERE old_token IS NOT NULL
    UNION ALL
    SELECT old_token, old_until FROM exhausted
),
closed AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT old_until FROM ended WHERE old_token = a.lease_token),
        outcome = 'expired', error = 'lease expired'
    WHERE a.lease_token = ANY (ARRAY(SELECT old_token FROM ended))
),
opened AS (
    INSERT INTO job_attempts (job_id, attempt, lease_token, worker, started_at)
    SELECT id, attempts, lease_token, locked_by, (SELECT now FROM clock)
    FROM claimed
)
SELECT id AS job_id, tenant_id, kind, payload, attempts AS attempt, lease_token,
       locked_until, locked_by AS worker, current_schema() AS schema
FROM claimed
ORDER BY id;

