-- The job queue's persistent tables (applied after schema.sql, inside the chapter schema).

-- Lifecycle of a job. Who moves a job into and out of each state:
--   pending   : submit() creates it; fail() puts it back (retryable error, attempts left);
--               retry() puts a failed job back by hand. claim() moves it to running.
--   running   : claim() sets it with a fresh lease token and locked_until. finish() moves
--               it to done, fail() to pending or failed, cancel() to cancelled. When the
--               lease expires, claim() may take it again (a new attempt, a new token).
--   done      : finish() or finish_many() only, in the statement that writes the result
--               row. Final.
--   failed    : fail() when the error is permanent, the attempts are used up or the
--               deadline has passed; claim() when an expired lease had no attempts left.
--               Only an audited retry() moves it back to pending (with max_attempts raised,
--               so attempt numbers continue and the job id stays).
--   cancelled : cancel(), from pending or running. Final; a late finish() is rejected.
CREATE TYPE job_state AS ENUM ('pending', 'running', 'done', 'failed', 'cancelled');

-- The kinds of work the queue accepts; submit() of any other kind is refused.
CREATE TABLE job_kinds (
    kind        text PRIMARY KEY,
    description text NOT NULL
);

INSERT INTO job_kinds (kind, description) VALUES
    ('summarise', 'summarise one version of a document'),
    ('noop', 'do nothing (benchmarks and tests)'),
    ('flaky', 'fail a given number of times, then succeed (retry exercises)'),
    ('always_fail', 'always raise a retryable error (attempt cap exercises)');

CREATE TABLE jobs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       integer NOT NULL,
    kind            text NOT NULL REFERENCES job_kinds (kind),
    payload         jsonb NOT NULL,
    idempotency_key text,
    state           job_state NOT NULL DEFAULT 'pending',
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts    integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    run_after       timestamptz NOT NULL DEFAULT cq_now(),
    deadline        timestamptz,
    created_at      timestamptz NOT NULL DEFAULT cq_now(),
    finished_at     timestamptz,
    lease_token     uuid,
    locked_by       text,
    locked_until    timestamptz,
    last_error      text,
    -- A running job always has a lease; no other state keeps one.
    CONSTRAINT lease_iff_running CHECK (
        (state = 'running') = (lease_token IS NOT NULL AND locked_until IS NOT NULL)
    ),
    CONSTRAINT attempts_capped CHECK (attempts <= max_attempts)
);

-- One job per (tenant, idempotency key): a repeated submit returns the first job.
CREATE UNIQUE INDEX jobs_idempotency ON jobs (tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- The claim reads only these two small partial indexes, however many finished jobs pile up.
CREATE INDEX jobs_runnable ON jobs (run_after, id) WHERE state = 'pending';
CREATE INDEX jobs_lease_expiry ON jobs (locked_until, id) WHERE state = 'running';

-- One row per attempt: the job id names the user's intent, the lease token names one try.
-- claim() inserts the row (outcome NULL while running); finish() closes it 'done', fail()
-- 'retry' or 'failed', cancel() 'cancelled', and the claim that takes over or fails an
-- expired lease closes it 'expired' at the old locked_until.
CREATE TABLE job_attempts (
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt     integer NOT NULL CHECK (attempt >= 1),
    lease_token uuid NOT NULL UNIQUE,
    worker      text,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    outcome     text CHECK (outcome IN ('done', 'retry', 'failed', 'expired', 'cancelled')),
    error       text,
    PRIMARY KEY (job_id, attempt)
);

-- The result of a job: at most one row per job, written in finish()'s transaction.
CREATE TABLE job_results (
    job_id      bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id   integer NOT NULL,
    output      jsonb NOT NULL,
    lease_token uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT cq_now()
);

-- Manual interventions (retry, cancel by an operator): who, what, why, when.
CREATE TABLE job_audit (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id    bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id integer NOT NULL,
    actor     text NOT NULL CHECK (actor <> ''),
    action    text NOT NULL,
    reason    text NOT NULL CHECK (reason <> ''),
    at        timestamptz NOT NULL DEFAULT cq_now(),
    detail    jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX job_audit_job ON job_audit (job_id);
