-- The tables and statements of the course's demonstration handlers (cachequeue.course.app.effects):
-- what a job did to the outside world, so a notebook can count it after a worker was killed.

-- name: install
-- Add the handlers' kinds and their tables to a chapter schema (after db.reset_schema).
INSERT INTO job_kinds (kind, description) VALUES
    ('effect', 'call a vendor (every call counts), book a charge once per business key, then work')
ON CONFLICT (kind) DO NOTHING;
-- Every execution of a handler: the vendor call nothing protects (it happens per run).
CREATE TABLE IF NOT EXISTS effect_runs (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id  bigint NOT NULL,
    attempt integer NOT NULL,
    worker  text NOT NULL,
    pid     integer NOT NULL,
    at      timestamptz NOT NULL DEFAULT cq_now()
);
-- Charges, at most one per business key: the effect a second run must not repeat.
CREATE TABLE IF NOT EXISTS ledger (
    business_key text PRIMARY KEY,
    job_id       bigint NOT NULL,
    attempt      integer NOT NULL,
    amount       integer NOT NULL,
    at           timestamptz NOT NULL DEFAULT cq_now()
);
-- Receipts sent to customers (the chapter's exercise protects them with a business key).
CREATE TABLE IF NOT EXISTS receipts (
    business_key text PRIMARY KEY,
    job_id       bigint NOT NULL,
    sent_at      timestamptz NOT NULL DEFAULT cq_now()
);

-- name: record_run
-- One more call to the vendor, by this attempt (no key: every run does it again).
INSERT INTO effect_runs (job_id, attempt, worker, pid)
VALUES (%(job_id)s, %(attempt)s, %(worker)s, %(pid)s);

-- name: book
-- Book the charge of a business key once; a second run inserts nothing and returns no row.
INSERT INTO ledger (business_key, job_id, attempt, amount)
VALUES (%(key)s, %(job_id)s, %(attempt)s, %(amount)s)
ON CONFLICT (business_key) DO NOTHING
RETURNING business_key;

-- name: counts
-- Per job: handler runs (vendor calls), ledger rows, result rows.
SELECT j.id AS job_id,
       (SELECT count(*) FROM effect_runs r WHERE r.job_id = j.id)::integer AS runs,
       (SELECT count(*) FROM ledger l WHERE l.job_id = j.id)::integer AS charges,
       (SELECT count(*) FROM job_results x WHERE x.job_id = j.id)::integer AS results
FROM jobs j
WHERE j.kind = 'effect'
ORDER BY j.id;
