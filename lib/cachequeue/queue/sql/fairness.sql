-- The fair claim (cachequeue.queue.fairness): the order in which it chooses jobs, and the
-- per-tenant lock that makes its cap hold. It only chooses: the claim statement of
-- queries.sql takes the chosen jobs (its `chosen` part), so claiming is written once.
-- Needs the indexes of fairness_indexes.sql.

-- name: fair_choice
-- The jobs a fair claim takes (at most %(limit)s): expired leases first, then pending jobs, fewest running first.
-- Fair order: a tenant's k-th pending job would be its (running + k)-th job in flight, and
-- the choice takes the jobs with the smallest such number first (ties: earliest job_rank,
-- i.e. oldest run_after less the priority's head start).
-- So a tenant with 10,000 queued jobs and 8 running waits behind a tenant with 10 queued
-- and none running. With a tenant cap (NULL: none), a tenant gets at most cap - running
-- pending jobs and takes over at most cap - live expired leases (live: running with an
-- unexpired lease), so it never holds more than cap live leases; expired leases keep their
-- place in `running` until someone takes them over. The chosen rows stay locked until the
-- claim's transaction ends, so fair claims running at once choose different jobs. Given a
-- list of tenants (those whose lock the claim holds), it looks at those only. The cost: one
-- index probe per tenant with pending jobs (the skip scan), so a choice reads O(tenants)
-- index entries where the plain claim reads O(limit).
WITH RECURSIVE clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
-- Every tenant with a pending job: a skip scan over jobs_fair, one probe per tenant.
skip_scan AS (
    (SELECT tenant_id FROM jobs WHERE state = 'pending' ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT j.tenant_id FROM jobs j
            WHERE j.state = 'pending' AND j.tenant_id > t.tenant_id
            ORDER BY j.tenant_id LIMIT 1)
    FROM skip_scan t
    WHERE t.tenant_id IS NOT NULL
),
-- Expired leases with attempts left, oldest first (index jobs_lease_expiry). Bounded per call.
expired AS (
    SELECT id, tenant_id, locked_until,
           row_number() OVER (PARTITION BY tenant_id ORDER BY locked_until, id) AS k
    FROM (SELECT id, tenant_id, locked_until
          FROM jobs
          WHERE state = 'running' AND locked_until <= (SELECT now FROM clock)
            AND attempts - handbacks < max_attempts
            AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s::text[]))
            AND (%(tenants)s::integer[] IS NULL OR tenant_id = ANY (%(tenants)s::integer[]))
          ORDER BY locked_until, id
          LIMIT 100) oldest
),
-- The tenants to look at: the given ones, or every tenant with pending jobs or expired leases.
tenants AS (
    SELECT unnest(%(tenants)s::integer[]) AS tenant_id
    UNION
    SELECT tenant_id FROM skip_scan
    WHERE %(tenants)s::integer[] IS NULL AND tenant_id IS NOT NULL
    UNION
    SELECT tenant_id FROM expired
),
-- How many jobs each runs now and how many of those hold a live lease (index
-- jobs_fair_running alone), and so how many pending jobs it may add and leases it may take over.
load AS (
    SELECT t.tenant_id, r.running,
           greatest(0, least(%(limit)s::integer,
                             coalesce(%(tenant_cap)s::integer - r.running, %(limit)s::integer)))
               AS room,
           greatest(0, coalesce(%(tenant_cap)s::integer - r.live, %(limit)s::integer))
               AS takeovers
    FROM tenants t
    CROSS JOIN LATERAL (
        SELECT count(*)::integer AS running,
               (count(*) FILTER (WHERE j.locked_until > (SELECT now FROM clock)))::integer AS live
        FROM jobs j
        WHERE j.state = 'running' AND j.tenant_id = t.tenant_id
    ) r
),
-- Each tenant's next due jobs (at most its room), numbered by the place they would take.
-- Within a tenant, in the plain claim's order (job_rank: priority with aging); between
-- tenants the place comes first, so priority breaks ties only among equal places.
candidates AS (
    SELECT c.id, c.run_after, l.running + c.k AS place
    FROM load l
    CROSS JOIN LATERAL (
        SELECT j.id, job_rank(j.run_after, j.priority) AS run_after,
               row_number() OVER (ORDER BY job_rank(j.run_after, j.priority), j.id) AS k
        FROM jobs j
        WHERE j.state = 'pending' AND j.tenant_id = l.tenant_id
          AND j.run_after <= (SELECT now FROM clock)
          AND job_rank(j.run_after, j.priority) <= (SELECT now FROM clock)
          AND (%(kinds)s::text[] IS NULL OR j.kind = ANY (%(kinds)s::text[]))
        ORDER BY job_rank(j.run_after, j.priority), j.id
        LIMIT l.room
    ) c
),
-- Lock what is chosen: first the expired leases each tenant may take over (as the plain
-- claim takes expired leases first), then the best places. SKIP LOCKED passes over jobs
-- another claim holds, and the WHERE clause is re-checked on the newest version of each
-- row it locks. Read lazily: fresh only for the places that takeovers did not fill.
takeovers AS (
    SELECT j.id AS job_id, j.tenant_id
    FROM expired e
    JOIN load l ON l.tenant_id = e.tenant_id AND e.k <= l.takeovers
    JOIN jobs j ON j.id = e.id
    WHERE j.state = 'running' AND j.locked_until <= (SELECT now FROM clock)
    ORDER BY e.locked_until, e.id
    LIMIT (SELECT %(limit)s::integer)
    FOR UPDATE OF j SKIP LOCKED
),
fresh AS (
    SELECT j.id AS job_id, j.tenant_id
    FROM candidates c
    JOIN jobs j ON j.id = c.id
    WHERE j.state = 'pending' AND j.run_after <= (SELECT now FROM clock)
    ORDER BY c.place, c.run_after, c.id
    LIMIT (SELECT %(limit)s::integer)
    FOR UPDATE OF j SKIP LOCKED
)
SELECT * FROM takeovers
UNION ALL
SELECT * FROM fresh
LIMIT (SELECT %(limit)s::integer);

-- name: lock_tenants
-- Take the fair claim's lock on each of these tenants, in tenant order, until the transaction ends.
-- Why the cap holds: a tenant's running jobs are counted (by fair_choice, again) only
-- under its lock, in a statement that starts after the lock was granted, so the count
-- includes every job the previous holder claimed and committed. What it costs: fair claims
-- that want the same tenant take turns (each waits for the other's transaction, a few
-- milliseconds), and a capped fair claim is four statements in one transaction instead of
-- two. All take the locks in one order, so they cannot deadlock. The key names the schema,
-- so chapters in other schemas never wait for each other (a hash collision only makes one
-- wait needlessly). Plain claims (jobs.claim_many) take no lock: the cap binds fair claims.
SELECT count(pg_advisory_xact_lock(hashtext('cachequeue.fairness.' || current_schema()),
                                   tenant_id))
FROM (SELECT DISTINCT unnest(%(tenants)s::integer[]) AS tenant_id ORDER BY tenant_id) ordered;
