-- The verdict of a chaos run (cachequeue.course.procs.chaos): what survived, folded into counts.

-- name: verdict
-- Per job: its state, result rows, finished attempts, charges and runs; then the counts.
WITH per_job AS (
    SELECT j.id, j.state,
           (SELECT count(*) FROM job_results r WHERE r.job_id = j.id) AS results,
           (SELECT count(*) FROM job_attempts a
            WHERE a.job_id = j.id AND a.outcome = 'done') AS done_attempts,
           -- the result row carries the lease token of the attempt that finished the job
           (SELECT count(*) FROM job_results r
            JOIN job_attempts a ON a.job_id = r.job_id AND a.lease_token = r.lease_token
                               AND a.outcome = 'done'
            WHERE r.job_id = j.id) AS results_of_their_attempt,
           -- and the handler wrote that token into the output it computed
           (SELECT count(*) FROM job_results r
            WHERE r.job_id = j.id AND r.output ->> 'token' = r.lease_token::text) AS own_outputs,
           (SELECT count(*) FROM ledger l WHERE l.job_id = j.id) AS charges,
           (SELECT count(*) FROM effect_runs e WHERE e.job_id = j.id) AS runs
    FROM jobs j
)
SELECT count(*)::integer AS jobs,
       (count(*) FILTER (WHERE state = 'done'))::integer AS done,
       (count(*) FILTER (WHERE state = 'running'))::integer AS stuck_running,
       (count(*) FILTER (WHERE results = 0))::integer AS lost,
       (count(*) FILTER (WHERE results > 1))::integer AS duplicates,
       (count(*) FILTER (WHERE done_attempts <> 1))::integer AS not_one_finished_attempt,
       (count(*) FILTER (WHERE results_of_their_attempt <> results))::integer
           AS results_not_of_their_attempt,
       (count(*) FILTER (WHERE own_outputs <> results))::integer AS outputs_not_of_their_attempt,
       (count(*) FILTER (WHERE charges <> 1))::integer AS not_one_charge,
       coalesce(sum(runs), 0)::integer AS handler_runs,
       (SELECT count(*) FROM job_attempts)::integer AS attempts,
       (SELECT count(*) FROM job_attempts WHERE outcome IS NULL)::integer AS open_attempts,
       (SELECT count(*) FROM job_attempts WHERE outcome = 'expired')::integer AS expired_attempts,
       (SELECT count(*) FROM job_attempts WHERE outcome = 'released')::integer AS released_attempts,
       (SELECT count(*) FROM job_attempts
        WHERE rejected_report IS NOT NULL)::integer AS stale_reports_rejected
FROM per_job;

-- name: done_count
-- How many jobs are done (the run's progress).
SELECT count(*) FROM jobs WHERE state = 'done';

-- name: not_done
-- Whether a job's result has not been written (after a kill meant to land before the flush).
SELECT state <> 'done' FROM jobs WHERE id = %(job_id)s;

-- name: taken_over
-- Whether a later attempt of a job has started (a paused worker's job was taken over).
SELECT EXISTS (SELECT 1 FROM job_attempts
               WHERE job_id = %(job_id)s AND attempt > %(attempt)s);

-- name: attempts
-- Every attempt of the run (for its recorded timeline), in order of start.
SELECT job_id, attempt, worker, started_at, finished_at, outcome, rejected_report, rejected_at
FROM job_attempts
ORDER BY started_at, job_id, attempt;
