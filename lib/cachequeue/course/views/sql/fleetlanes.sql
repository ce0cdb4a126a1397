-- The lease log of chapter 06's lease timelines (cachequeue.course.views.fleetlanes).

-- name: record
-- Keep every lease a job is given: each claim and each renewal (an UPDATE that sets
-- locked_until on a running job) adds a row with the attempt, the holder, the moment on the
-- database clock and the new end. A row trigger on jobs, in the chapter's own schema.
CREATE TABLE IF NOT EXISTS lease_log (
    job_id       bigint NOT NULL,
    attempt      integer NOT NULL,
    worker       text,
    at           timestamptz NOT NULL,
    locked_until timestamptz NOT NULL
);
CREATE OR REPLACE FUNCTION lease_log_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lease_log (job_id, attempt, worker, at, locked_until)
    VALUES (NEW.id, NEW.attempts, NEW.locked_by, cq_now(), NEW.locked_until);
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER lease_log_record
AFTER UPDATE OF locked_until ON jobs
FOR EACH ROW
WHEN (NEW.state = 'running' AND NEW.locked_until IS NOT NULL
      AND NEW.locked_until IS DISTINCT FROM OLD.locked_until)
EXECUTE FUNCTION lease_log_record();

-- name: leases
-- The leases given to some jobs since an instant, in order.
SELECT job_id, attempt, at, locked_until
FROM lease_log
WHERE job_id = ANY(%(jobs)s) AND at >= %(since)s
ORDER BY job_id, attempt, at, locked_until;

-- name: attempts
-- The attempts of some jobs started since an instant.
SELECT job_id, attempt, worker, started_at, finished_at, outcome, rejected_report, rejected_at
FROM job_attempts
WHERE job_id = ANY(%(jobs)s) AND started_at >= %(since)s
ORDER BY started_at, job_id, attempt;

-- name: jobs_since
-- The jobs with an attempt started since an instant (at most a bound more than the caller allows).
SELECT DISTINCT job_id
FROM job_attempts
WHERE started_at >= %(since)s
ORDER BY job_id
LIMIT %(limit)s;
