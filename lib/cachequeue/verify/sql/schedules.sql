-- The final snapshot of a schedules run (cachequeue.verify.schedules): what check() reads.

-- name: schedules
-- Every schedule with what its policy needs.
SELECT id, name, cron, timezone, catch_up, starts_at FROM schedules ORDER BY id;

-- name: fires
-- Every fire row (a duplicate shows as two rows of one schedule and fire time).
SELECT schedule_id, fire_at, job_id, enqueued_at, scheduler
FROM schedule_fires
ORDER BY schedule_id, fire_at, job_id;

-- name: jobs
-- Every job's id and idempotency key.
SELECT id, idempotency_key FROM jobs ORDER BY id;
