-- The final snapshot of a verify run (history.snapshot): every row the checks read.

-- name: snapshot_jobs
-- Every job with the fields the checks read.
SELECT id AS job_id, tenant_id, kind, state, attempts, handbacks, max_attempts, payload, lease_token,
       locked_until, run_after, created_at, finished_at, last_error
FROM jobs ORDER BY id;

-- name: snapshot_attempts
-- Every attempt row, by job and attempt.
SELECT job_id, attempt, lease_token, worker, started_at, finished_at, outcome,
       rejected_report, rejected_at
FROM job_attempts ORDER BY job_id, attempt;

-- name: snapshot_results
-- Every stored result, with the lease token that wrote it.
SELECT job_id, lease_token, output, created_at FROM job_results ORDER BY job_id;

-- name: snapshot_effects
-- The side-effect store of a verify run: one row per business key that took effect.
SELECT key, job_id, lease_token, applied_at FROM verify_effects ORDER BY key;

-- name: snapshot_transitions
-- The state changes out of a terminal state that the run's trigger recorded (verify/sql/driver.sql).
SELECT id, job_id, old_state, new_state, at FROM verify_transitions ORDER BY id;

-- name: snapshot_audit
-- The audit rows (cancel, retry) of every job.
SELECT job_id, action, actor, at FROM job_audit ORDER BY id;

-- name: now
-- The database clock at the snapshot.
SELECT cq_now() AS now;
