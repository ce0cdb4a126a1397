-- Statements of the HTTP service (cachequeue.service). The job statements themselves
-- (submit, status) are the queue's own, in cachequeue/queue/sql/queries.sql; these only
-- read. Every read names the tenant: a job of another tenant is simply not found.

-- name: job_request
-- The kind and payload a job of this tenant was submitted with (None for another tenant's job).
SELECT kind, payload, state::text AS state
FROM jobs
WHERE id = %(job_id)s AND tenant_id = %(tenant_id)s;

-- name: tenant_submit_lock
-- Serialises one tenant's submits for the rest of the transaction, so the pending count
-- and the insert that follows it are one step (other tenants are not held).
SELECT pg_advisory_xact_lock(hashtext('cachequeue.service.submit.' || current_schema()),
                             %(tenant_id)s);

-- name: pending_count
-- This tenant's pending jobs, counted up to %(cap)s (the cap is all that matters).
SELECT count(*) FROM (
    SELECT 1 FROM jobs WHERE tenant_id = %(tenant_id)s AND state = 'pending' LIMIT %(cap)s
) AS pending;

-- name: key_taken
-- Whether this tenant already has a job under this idempotency key (a repeat is not a new job).
SELECT EXISTS (SELECT 1 FROM jobs WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(key)s);

-- name: job_fields
-- What a job of this tenant was submitted with, to compare a repeated request with (None for another tenant's job).
SELECT kind, payload, state::text AS state, max_attempts, run_after, created_at
FROM jobs
WHERE id = %(job_id)s AND tenant_id = %(tenant_id)s;

-- name: events
-- A job's history as numbered events, derived from the jobs, job_attempts and job_audit rows.
-- One event per notification the jobs table sends: accepted (the insert); started (a claim,
-- also the takeover of an expired lease); and how each attempt ended: done, retrying,
-- released, failed, cancelled. An operator's retry is `requeued`, a cancel of a pending job
-- `cancelled` (both from the audit rows). An attempt that expired and was taken over ends in
-- the next `started`; one that expired on the last attempt ends the job `failed`.
-- Events are ordered by (attempt, phase, audit id), an order in which every new event sorts
-- after every old one, so `seq` (the row number in that order) never changes once given:
-- it is the event id that Last-Event-ID sends back.
WITH job AS (
    SELECT id, state::text AS state, created_at
    FROM jobs
    WHERE id = %(job_id)s AND tenant_id = %(tenant_id)s
),
attempts AS (
    SELECT a.*, EXISTS (SELECT 1 FROM job_attempts b
                        WHERE b.job_id = a.job_id AND b.attempt > a.attempt) AS taken_over,
           EXISTS (SELECT 1 FROM job_audit r
                   WHERE r.job_id = a.job_id AND r.action = 'retry'
                     AND (r.detail ->> 'previous_attempts')::integer = a.attempt) AS retried
    FROM job_attempts a
    WHERE a.job_id = (SELECT id FROM job)
),
timeline AS (
    SELECT 0 AS attempt, 1 AS phase, 0::bigint AS tie, 'accepted' AS event,
           'pending' AS state, created_at AS at, NULL::text AS error
    FROM job
    UNION ALL
    SELECT attempt, 0, 0, 'started', 'running', started_at, NULL
    FROM attempts
    UNION ALL
    SELECT attempt, 1, 0,
           CASE outcome WHEN 'retry' THEN 'retrying' WHEN 'expired' THEN 'failed'
                        ELSE outcome END,
           CASE outcome WHEN 'retry' THEN 'pending' WHEN 'released' THEN 'pending'
                        WHEN 'expired' THEN 'failed' ELSE outcome END,
           finished_at, error
    FROM attempts
    WHERE outcome IS NOT NULL AND (outcome <> 'expired' OR NOT taken_over OR retried)
    UNION ALL
    SELECT (r.detail ->> 'previous_attempts')::integer, 2, r.id, 'requeued', 'pending',
           r.at, r.reason
    FROM job_audit r
    WHERE r.job_id = (SELECT id FROM job) AND r.action = 'retry'
    UNION ALL
    SELECT (r.detail ->> 'attempts')::integer, 2, r.id, 'cancelled', 'cancelled', r.at, r.reason
    FROM job_audit r
    WHERE r.job_id = (SELECT id FROM job) AND r.action = 'cancel'
      AND r.detail ->> 'previous_state' = 'pending'
),
numbered AS (
    SELECT row_number() OVER (ORDER BY attempt, phase, tie) AS seq, *
    FROM timeline
)
SELECT (SELECT state FROM job) AS job_state, seq, event, state, attempt, at, error
FROM (SELECT 1) AS always
LEFT JOIN numbered ON numbered.seq > %(after)s
ORDER BY seq;

-- name: ready
-- The readiness probe, read-only: the claim's first step without its lock, whether the server takes writes, and a lock on jobs that would make claims wait.
-- No FOR UPDATE: a probe takes no row lock, no transaction id and writes no WAL. A session
-- holding jobs in ACCESS EXCLUSIVE mode (a migration) makes the first sub-select wait until
-- lock_timeout; one holding SHARE or stronger (CREATE INDEX, LOCK TABLE ... IN SHARE MODE)
-- lets reads through but stops every claim and submit, which the last column names.
SELECT (SELECT count(*)
        FROM (SELECT id FROM jobs
              WHERE state = 'pending' AND run_after <= cq_now()
                AND job_rank(run_after, priority) <= cq_now()
              ORDER BY job_rank(run_after, priority), id
              LIMIT 1) AS next_job) AS runnable,
       pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only,
       (SELECT min(mode) FROM pg_locks
        WHERE locktype = 'relation' AND relation = 'jobs'::regclass AND granted
          AND pid <> pg_backend_pid()
          AND mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock',
                       'AccessExclusiveLock')) AS blocking_lock;

-- name: ready_timeout
-- Bound the probe's statements (and its lock waits) for the rest of its transaction.
SELECT set_config('statement_timeout', %(ms)s, true), set_config('lock_timeout', %(ms)s, true);

-- name: install_lock
-- Serialises installs of the service's table, so processes starting together do not collide.
SELECT pg_advisory_xact_lock(hashtext('cachequeue.service.install.' || current_schema()));

-- name: install_buckets
-- The per-tenant submit buckets (cachequeue.service.tenantlimits): one row per tenant that
-- submitted, so every process of the service draws from the same bucket.
CREATE TABLE IF NOT EXISTS tenant_submit_buckets (
    tenant_id  bigint PRIMARY KEY,
    tokens     float8 NOT NULL CHECK (tokens >= 0),
    updated_at timestamptz NOT NULL
);

-- name: take_submit_token
-- Refill the tenant's bucket for the time passed (at most %(burst)s), then take one token; a row when taken, none when the bucket has less than one (nothing written then).
-- A tenant's first submit creates its bucket, full less this token. The upsert locks the
-- row until the caller's transaction ends, so concurrent takers of one tenant are serialised.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
)
INSERT INTO tenant_submit_buckets AS b (tenant_id, tokens, updated_at)
SELECT %(tenant_id)s, %(burst)s - 1, now FROM clock
ON CONFLICT (tenant_id) DO UPDATE
SET tokens = least(%(burst)s, b.tokens + %(rate)s * greatest(0, extract(epoch FROM
                   EXCLUDED.updated_at - b.updated_at)::float8)) - 1,
    updated_at = greatest(b.updated_at, EXCLUDED.updated_at)
WHERE least(%(burst)s, b.tokens + %(rate)s * greatest(0, extract(epoch FROM
            EXCLUDED.updated_at - b.updated_at)::float8)) >= 1
RETURNING tokens;

-- name: submit_tokens
-- The tokens in the tenant's bucket now, refilled for the time passed (how long a refused submit should wait).
SELECT least(%(burst)s, tokens + %(rate)s * greatest(0, extract(epoch FROM
             cq_now() - updated_at)::float8)) AS tokens
FROM tenant_submit_buckets
WHERE tenant_id = %(tenant_id)s;

-- name: kinds
-- The kinds the queue knows (job_kinds), for the OpenAPI document's enum of a job's kind.
SELECT kind FROM job_kinds ORDER BY kind;

-- name: fair_index_missing
-- Whether the fair claim's index on pending jobs by tenant, which the pending count reads, is missing in this schema.
SELECT to_regclass('jobs_fair') IS NULL;
