-- The tables a verify run adds to the queue's schema (verify.driver).

-- name: install
-- The job kind of a verify run and the store of its handler's external side effect (one row per business key).
INSERT INTO job_kinds (kind, description)
VALUES ('verify_effect', 'a verify run: work a while, then apply an effect keyed by payload.key'),
       ('verify_probe', 'a verify run: the prober''s scripted jobs (verify.prober)')
ON CONFLICT (kind) DO NOTHING;
CREATE TABLE IF NOT EXISTS verify_effects (
    key         text PRIMARY KEY,
    job_id      bigint NOT NULL,
    lease_token uuid NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT cq_now()
);
-- Every change of a job's state out of a terminal one (done, failed, cancelled), written by
-- the statement that made it: the checker's record of what no report may do (check 9).
CREATE TABLE IF NOT EXISTS verify_transitions (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id    bigint NOT NULL,
    old_state text NOT NULL,
    new_state text NOT NULL,
    at        timestamptz NOT NULL DEFAULT cq_now()
);
CREATE OR REPLACE FUNCTION verify_record_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO verify_transitions (job_id, old_state, new_state)
    VALUES (NEW.id, OLD.state::text, NEW.state::text);
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER verify_terminal_left AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (OLD.state::text IN ('done', 'failed', 'cancelled')
                       AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION verify_record_transition();

-- name: apply_effect
-- The handler's side effect, idempotent by business key: applied once, whoever comes again.
INSERT INTO verify_effects (key, job_id, lease_token) VALUES (%(key)s, %(job_id)s, %(lease_token)s)
ON CONFLICT (key) DO NOTHING
RETURNING key;

-- name: unsettled
-- Jobs not yet done or failed (the run waits for none).
SELECT count(*) FROM jobs WHERE state NOT IN ('done', 'failed', 'cancelled');

-- name: holders
-- The workers that hold a running job now, with the most work left in one of their jobs and
-- the seconds until the first of their leases runs out (the nemesis aims and times pauses with them).
SELECT j.locked_by,
       max(extract(epoch FROM a.started_at) + (j.payload ->> 'work')::float8
           - extract(epoch FROM cq_now()))::float8 AS work_left,
       min(extract(epoch FROM j.locked_until - cq_now()))::float8 AS expires_in
FROM jobs j
JOIN job_attempts a ON a.lease_token = j.lease_token
WHERE j.state = 'running' AND j.locked_by IS NOT NULL
GROUP BY j.locked_by;
