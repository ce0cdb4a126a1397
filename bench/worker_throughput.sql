-- Statements of bench/worker_throughput.py (its set-up; the timed work is the workers' own).

-- name: watch_all
-- Mark every job watched, as if an event stream followed each: their claims and finishes notify.
UPDATE jobs SET watched = true WHERE NOT watched;

-- name: graphile_done_log
-- graphile-worker deletes a job when it completes: log each completing statement's count and time, so the drain ends at the last completion the database recorded.
-- One row per statement (a statement-level trigger with a transition table), not per job:
-- its batched completion stays one cheap statement. Installed in its schema before the
-- workers start; the bench's own, not graphile-worker's.
CREATE TABLE bench_done (n bigint NOT NULL, at timestamptz NOT NULL);
CREATE FUNCTION bench_done_log() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO bench_done (n, at) SELECT count(*), now() FROM gone;
    RETURN NULL;
END
$$;
CREATE TRIGGER bench_done_log AFTER DELETE ON _private_jobs
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION bench_done_log();

-- name: check_graphile
-- Jobs left in graphile-worker's table, and when the last completing statement ran.
SELECT (SELECT count(*) FROM _private_jobs) AS remaining, (SELECT max(at) FROM bench_done) AS end_at;

-- name: check_pgboss
-- Jobs of pg-boss's queue not completed yet, and its last completion time (completed_on).
SELECT count(*) FILTER (WHERE state <> 'completed') AS remaining, max(completed_on) AS end_at
FROM job WHERE name = 'noop';
