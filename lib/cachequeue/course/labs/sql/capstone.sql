-- The table and reference queries of chapter 12's capstone (cachequeue.course.labs.capstone).

-- name: install
-- Add the table of published summaries (one row per business key) and the probes' own
-- job kind (so a probe never claims a job of the chapter) to a chapter schema.
INSERT INTO job_kinds (kind, description) VALUES
    ('probe', 'jobs a capstone probe submits, claims and fails inside a rolled-back transaction')
ON CONFLICT (kind) DO NOTHING;
CREATE TABLE IF NOT EXISTS published_summaries (
    business_key text PRIMARY KEY,
    job_id       bigint NOT NULL,
    summary      text NOT NULL,
    published_at timestamptz NOT NULL DEFAULT cq_now()
);

-- name: published
-- Every published summary, by business key (what a probe compares with).
SELECT business_key, job_id, summary FROM published_summaries ORDER BY business_key;

-- name: job_row
-- The fields of one job that a summary worker depends on.
SELECT tenant_id, kind, payload, idempotency_key FROM jobs WHERE id = %(job_id)s;

-- name: job_total
-- How many jobs the schema holds (a refused submit must not change it).
SELECT count(*) FROM jobs;

-- name: job_counts
-- The reference answer of the metrics step: jobs per tenant and state, non-empty pairs only.
SELECT tenant_id, state::text AS state, count(*) AS jobs
FROM jobs
GROUP BY tenant_id, state
ORDER BY tenant_id, state::text;

-- name: forget
-- Remove the summaries of some business keys (a probe starts from none, then rolls back).
DELETE FROM published_summaries WHERE business_key = ANY(%(keys)s);
