-- The smallest correct claim, which chapter 03 shows before the production statement
-- (queries.sql `claim`): the same idea, without lease expiry, attempt limits, attempt rows
-- or fairness. cachequeue.queue.jobs uses none of these.

-- name: minimal_claim
-- Claim the oldest due pending job in one statement: pick it with a row lock, skip rows others hold, mark it ours.
UPDATE jobs
SET state = 'running',
    attempts = attempts + 1,
    lease_token = gen_random_uuid(),
    locked_by = %(worker)s,
    locked_until = cq_now() + make_interval(secs => %(lease)s)
WHERE id = (
    SELECT id
    FROM jobs
    WHERE state = 'pending' AND run_after <= cq_now()
    ORDER BY run_after, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
RETURNING id, lease_token;
