-- The queue's queries, loaded by sqlfile.load("cachequeue.queue", "queries.sql") and run by
-- cachequeue.queue.jobs; queue.fairness runs the claim too (with the jobs it chose), and
-- queue.deadletter the retry (with the failures its dry run listed). Each block is one
-- statement, so each is one round trip and, on an autocommit connection, one short
-- transaction. Data-modifying CTEs let a statement change
-- several tables at once (the job, its attempt row, its result, its audit row).
--
-- `clock` is the statement's single instant: cq_now() read once, so the lease start, the
-- lease end and the attempt row all agree. Statements that take a Claim also check
-- `current_schema() = %(schema)s` and return current_schema(), so a Claim used on a
-- connection to another schema writes nothing and the caller can say why.

-- name: submit
-- Persist a new job of a known kind; with an idempotency key already used, a dedupe key held by an active job, or a run_after more than %(max_run_after)s seconds ahead, insert nothing.
-- A run_after in the past is now (greatest): a job never sorts ahead of jobs already due
-- (its priority, not its run_after, moves it ahead: job_rank). ON CONFLICT without a target
-- covers both keys' unique indexes: jobs_idempotency (for ever) and jobs_dedupe (while the
-- job holding the key is pending or running); an insert racing another with the same key
-- waits for it, then inserts nothing if it committed.
INSERT INTO jobs (tenant_id, kind, payload, idempotency_key, dedupe_key, priority, max_attempts,
                  run_after, deadline)
SELECT %(tenant_id)s, k.kind, %(payload)s::jsonb, %(idempotency_key)s::text, %(dedupe_key)s::text,
       %(priority)s::smallint, %(max_attempts)s,
       greatest(clock.now, coalesce(%(run_after_at)s::timestamptz,
                                    clock.now + coalesce(%(run_after_in)s::float8, 0) * interval '1 second')),
       coalesce(%(deadline_at)s::timestamptz,
                clock.now + %(deadline_in)s::float8 * interval '1 second')
FROM job_kinds k, (SELECT cq_now() AS now) AS clock
WHERE k.kind = %(kind)s
  AND (%(run_after_at)s::timestamptz IS NULL
       OR %(run_after_at)s::timestamptz <= clock.now + %(max_run_after)s::float8 * interval '1 second')
ON CONFLICT DO NOTHING
RETURNING id;

-- name: submitted
-- After an insert that returned nothing: the job holding the idempotency key, the active job holding the dedupe key, whether the kind exists, and whether run_after was in range.
SELECT (SELECT id FROM jobs
        WHERE tenant_id = %(tenant_id)s AND idempotency_key = %(idempotency_key)s::text) AS job_id,
       (SELECT id FROM jobs
        WHERE tenant_id = %(tenant_id)s AND dedupe_key = %(dedupe_key)s::text
          AND state IN ('pending', 'running')) AS active_job_id,
       EXISTS (SELECT 1 FROM job_kinds WHERE kind = %(kind)s) AS kind_known,
       (%(run_after_at)s::timestamptz IS NULL
        OR %(run_after_at)s::timestamptz <= cq_now() + %(max_run_after)s::float8 * interval '1 second')
           AS in_range;

-- name: claim
-- Claim up to %(limit)s runnable jobs (expired leases first, then due pending jobs) and open an attempt row for each.
-- Plan stability: the limit is read through a sub-select and rows are matched with
-- `= ANY (ARRAY(...))`, so the plan is the same (index scans only) whatever the limit and
-- the table size, and PostgreSQL keeps one cached plan instead of planning every call.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now,
           -- A claim lost in a server crash is the same as an expired lease: the job is
           -- claimable again. So the claim's commit need not wait for the disk; the next
           -- durable commit (finish, fail) flushes it along with its own. Local to this
           -- transaction; jobs.claim_many() restores it inside a caller's transaction.
           set_config('synchronous_commit', 'off', true) AS commit_mode
),
-- Expired leases with no attempts left are failed here, never run again. Bounded per call.
-- Attempts used up are attempts - handbacks: an attempt a stopping worker handed back
-- does not count against max_attempts.
exhausted AS (
    SELECT id, lease_token AS old_token, locked_until AS old_until
    FROM jobs
    WHERE state = 'running' AND locked_until <= (SELECT now FROM clock)
      AND attempts - handbacks >= max_attempts
    ORDER BY locked_until, id
    LIMIT 100
    FOR UPDATE SKIP LOCKED
),
gave_up AS (
    UPDATE jobs j
    SET state = 'failed', finished_at = (SELECT now FROM clock),
        last_error = 'lease expired on the last attempt (' || (j.attempts - j.handbacks)
                     || ' of ' || j.max_attempts || ')',
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    WHERE j.id = ANY (ARRAY(SELECT id FROM exhausted))
),
-- Jobs that another statement chose for this claim: the fair claim (queue/sql/fairness.sql)
-- picks them tenant by tenant and passes their ids. Each is taken only if it is still
-- claimable. A plain claim passes NULL: then this part reads nothing and the next two look.
chosen AS (
    SELECT id, lease_token AS old_token, locked_until AS old_until
    FROM jobs
    WHERE id = ANY (%(chosen)s::bigint[])
      AND (state = 'pending' AND run_after <= (SELECT now FROM clock)
           OR state = 'running' AND locked_until <= (SELECT now FROM clock)
              AND attempts - handbacks < max_attempts)
    FOR UPDATE SKIP LOCKED
),
-- Served by the partial index jobs_lease_expiry: only running rows, oldest expiry first.
expired AS (
    SELECT id, lease_token AS old_token, locked_until AS old_until
    FROM jobs
    WHERE %(chosen)s::bigint[] IS NULL
      AND state = 'running' AND locked_until <= (SELECT now FROM clock)
      AND attempts - handbacks < max_attempts
      AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s::text[]))
    ORDER BY locked_until, id
    LIMIT (SELECT %(limit)s::integer)
    FOR UPDATE SKIP LOCKED
),
-- Served by the partial index jobs_runnable: only pending rows, earliest run_after first,
-- each moved ahead by its priority's head start (job_rank in queue.sql; with every priority
-- 0, the default, the rank is run_after itself). A due job's rank is never later than now.
-- SKIP LOCKED passes over rows another claim holds; the WHERE clause is re-checked on
-- the newest version of each row it locks, so a job claimed meanwhile is never taken twice.
fresh AS (
    SELECT id, NULL::uuid AS old_token, NULL::timestamptz AS old_until
    FROM jobs
    WHERE %(chosen)s::bigint[] IS NULL
      AND state = 'pending' AND run_after <= (SELECT now FROM clock)
      AND job_rank(run_after, priority) <= (SELECT now FROM clock)
      AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s::text[]))
    ORDER BY job_rank(run_after, priority), id
    LIMIT (SELECT %(limit)s::integer)
    FOR UPDATE SKIP LOCKED
),
-- CTEs are read lazily: expired is only read for the places that chosen did not fill,
-- and fresh (its rows only locked then) for the places that expired leases did not fill.
picked AS (
    SELECT * FROM chosen
    UNION ALL
    SELECT * FROM expired
    UNION ALL
    SELECT * FROM fresh
    LIMIT (SELECT %(limit)s::integer)
),
claimed AS (
    UPDATE jobs j
    SET state = 'running', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        locked_until = (SELECT now FROM clock) + %(lease)s::float8 * interval '1 second',
        locked_by = %(worker)s::text
    WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
    RETURNING j.id, j.tenant_id, j.kind, j.payload, j.attempts, j.lease_token,
              j.locked_until, j.locked_by
),
-- The previous holder's attempt ends when its lease did.
ended AS (
    SELECT old_token, old_until FROM picked WHERE old_token IS NOT NULL
    UNION ALL
    SELECT old_token, old_until FROM exhausted
),
-- The EXISTS is a one-time filter: a claim that took over nothing (the usual case) does not
-- look at job_attempts at all. Without it, a small job_attempts (a young queue) was read
-- whole on every claim: the planner prefers that to the index for a handful of pages, and
-- the pages grow with every job (the profile of chapter 11, bench/worker_profile.py).
closed AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT old_until FROM ended WHERE old_token = a.lease_token),
        outcome = 'expired', error = 'lease expired'
    WHERE EXISTS (SELECT 1 FROM ended)
      AND a.lease_token = ANY (ARRAY(SELECT old_token FROM ended))
),
opened AS (
    INSERT INTO job_attempts (job_id, attempt, lease_token, worker, started_at)
    SELECT id, attempts, lease_token, locked_by, (SELECT now FROM clock)
    FROM claimed
)
SELECT id AS job_id, tenant_id, kind, payload, attempts AS attempt, lease_token,
       locked_until, locked_by AS worker, current_schema() AS schema
FROM claimed
ORDER BY id;

-- name: commit_mode
-- The session's synchronous_commit, read before a claim inside a caller's transaction.
SELECT current_setting('synchronous_commit');

-- name: set_commit_mode
-- Put synchronous_commit back for the rest of the caller's transaction (the claim turned it off).
SELECT set_config('synchronous_commit', %(mode)s, true);

-- name: heartbeat
-- Extend a lease that is still held and unexpired; report the schema the check ran in.
-- One reading of the clock: the instant the lease is checked against is the instant the
-- new lease starts from.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
renewed AS (
    UPDATE jobs
    SET locked_until = (SELECT now FROM clock) + %(lease)s::float8 * interval '1 second'
    WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running'
      AND locked_until > (SELECT now FROM clock) AND current_schema() = %(schema)s
    RETURNING locked_until
)
SELECT (SELECT locked_until FROM renewed) AS locked_until, current_schema() AS schema;

-- name: finish
-- If the lease is still held and unexpired: store the result once, mark the job done, close the attempt.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
owned AS (
    UPDATE jobs
    SET state = 'done', finished_at = (SELECT now FROM clock),
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running'
      AND locked_until > (SELECT now FROM clock) AND current_schema() = %(schema)s
    RETURNING id, tenant_id
),
stored AS (
    INSERT INTO job_results (job_id, tenant_id, output, lease_token, created_at)
    SELECT id, tenant_id, %(output)s::jsonb, %(lease_token)s, (SELECT now FROM clock)
    FROM owned
    ON CONFLICT (job_id) DO NOTHING
),
closed AS (
    UPDATE job_attempts
    SET finished_at = (SELECT now FROM clock), outcome = 'done'
    WHERE lease_token = %(lease_token)s AND job_id IN (SELECT id FROM owned)
),
-- Refused (the lease was lost): say so on the holder's own attempt row, once. A forged
-- token matches no row; an attempt that did finish (a repeated report) is left alone.
refused AS (
    UPDATE job_attempts
    SET rejected_report = 'finish', rejected_at = (SELECT now FROM clock)
    WHERE job_id = %(job_id)s AND lease_token = %(lease_token)s
      AND NOT EXISTS (SELECT 1 FROM owned) AND outcome IS DISTINCT FROM 'done'
      AND rejected_report IS NULL AND current_schema() = %(schema)s
)
SELECT (SELECT count(*) FROM owned) AS finished, current_schema() AS schema;

-- name: finish_many
-- finish for several claims at once: each job whose lease is still held gets its result and is done.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
-- The batch arrives as three texts, not three lists of parameters: an array literal of the
-- ids, one of the tokens, and one JSON array of the outputs (jobs.finish_many builds them
-- by joining strings; adapting 3,000 values one by one took twice as long as the statement).
-- ROWS FROM lines the three up by position.
given AS (
    SELECT *
    FROM ROWS FROM (unnest(%(job_ids)s::bigint[]), unnest(%(lease_tokens)s::uuid[]),
                    jsonb_array_elements(%(outputs)s::jsonb))
         AS g (job_id, lease_token, output)
),
owned AS (
    UPDATE jobs j
    SET state = 'done', finished_at = (SELECT now FROM clock),
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    FROM given g
    WHERE j.id = g.job_id AND j.lease_token = g.lease_token AND j.state = 'running'
      AND j.locked_until > (SELECT now FROM clock) AND current_schema() = %(schema)s
    RETURNING j.id, j.tenant_id, g.lease_token, g.output
),
stored AS (
    INSERT INTO job_results (job_id, tenant_id, output, lease_token, created_at)
    SELECT id, tenant_id, output, lease_token, (SELECT now FROM clock)
    FROM owned
    ON CONFLICT (job_id) DO NOTHING
),
closed AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT now FROM clock), outcome = 'done'
    FROM owned o
    WHERE a.lease_token = o.lease_token
),
refused AS (
    UPDATE job_attempts a
    SET rejected_report = 'finish', rejected_at = (SELECT now FROM clock)
    FROM given g
    WHERE a.job_id = g.job_id AND a.lease_token = g.lease_token
      AND g.lease_token NOT IN (SELECT lease_token FROM owned)
      AND a.outcome IS DISTINCT FROM 'done' AND a.rejected_report IS NULL
      AND current_schema() = %(schema)s
)
SELECT coalesce((SELECT array_agg(id) FROM owned), '{}') AS finished,
       current_schema() AS schema;

-- name: fail
-- If the lease is still held: record the error, then schedule a retry or fail the job for good.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
held AS (
    SELECT id, attempts - handbacks AS used, max_attempts,
           least(deadline, created_at + %(policy_deadline)s::float8 * interval '1 second')
               AS give_up_after
    FROM jobs
    WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running'
      AND locked_until > (SELECT now FROM clock) AND current_schema() = %(schema)s
    FOR UPDATE
),
-- Failed when the error is permanent, the attempts are used up (the smaller of the job's
-- and the policy's cap; hand-backs do not count), or the retry would start after the deadline.
decided AS (
    SELECT id, next_run,
           CASE WHEN %(permanent)s::boolean
                  OR used >= least(max_attempts, %(policy_max_attempts)s::integer)
                  OR next_run > give_up_after
                THEN 'failed' ELSE 'pending' END::job_state AS state
    FROM (SELECT *, (SELECT now FROM clock) + %(delay)s::float8 * interval '1 second'
                        AS next_run
          FROM held) h
),
moved AS (
    UPDATE jobs j
    SET state = d.state,
        run_after = CASE WHEN d.state = 'pending' THEN d.next_run ELSE j.run_after END,
        finished_at = CASE WHEN d.state = 'failed' THEN (SELECT now FROM clock) END,
        last_error = %(error)s::text,
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    FROM decided d
    WHERE j.id = d.id
    RETURNING j.state
),
closed AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT now FROM clock),
        outcome = CASE WHEN d.state = 'failed' THEN 'failed' ELSE 'retry' END,
        error = %(error)s::text
    FROM decided d
    WHERE a.job_id = d.id AND a.lease_token = %(lease_token)s
),
-- Refused (the lease was lost): say so on the holder's own attempt row, as finish does.
refused AS (
    UPDATE job_attempts
    SET rejected_report = 'fail', rejected_at = (SELECT now FROM clock)
    WHERE job_id = %(job_id)s AND lease_token = %(lease_token)s
      AND NOT EXISTS (SELECT 1 FROM held) AND outcome IS DISTINCT FROM 'retry'
      AND outcome IS DISTINCT FROM 'failed'
      AND rejected_report IS NULL AND current_schema() = %(schema)s
)
SELECT (SELECT state::text FROM moved) AS state, current_schema() AS schema;

-- name: cancel
-- Cancel a pending or running job of this tenant, close its open attempt, and audit who and why.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
target AS (
    SELECT id, tenant_id, state, attempts, lease_token AS old_token
    FROM jobs
    WHERE id = %(job_id)s AND tenant_id = %(tenant_id)s AND state IN ('pending', 'running')
    FOR UPDATE
),
moved AS (
    UPDATE jobs j
    SET state = 'cancelled', finished_at = (SELECT now FROM clock),
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    FROM target t
    WHERE j.id = t.id
    RETURNING j.id
),
closed AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT now FROM clock), outcome = 'cancelled', error = %(reason)s::text
    FROM target t
    WHERE a.lease_token = t.old_token
),
audited AS (
    INSERT INTO job_audit (job_id, tenant_id, actor, action, reason, at, detail)
    SELECT id, tenant_id, %(actor)s, 'cancel', %(reason)s, (SELECT now FROM clock),
           jsonb_build_object('previous_state', state::text, 'attempts', attempts)
    FROM target
)
SELECT count(*) AS cancelled FROM moved;

-- name: release
-- Hand a held job back (a worker stopping): pending at once, the attempt closed 'released' and not counted; failed at the hand-back cap.
-- No backoff: nothing went wrong with the job. The claim raised attempts and it stays
-- raised (attempt numbers name attempt rows); handbacks goes up with it, so the attempt
-- does not count against max_attempts. Hand-backs have a cap of their own (max_handbacks,
-- queue.limits.MAX_HANDBACKS): a job whose handler outlives every worker's shutdown would
-- otherwise go round for ever, so the hand-back that reaches the cap fails the job, saying why.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
held AS (
    SELECT id, handbacks + 1 AS handbacks,
           CASE WHEN handbacks + 1 >= %(max_handbacks)s::integer THEN 'failed'
                ELSE 'pending' END::job_state AS state
    FROM jobs
    WHERE id = %(job_id)s AND lease_token = %(lease_token)s AND state = 'running'
      AND locked_until > (SELECT now FROM clock) AND current_schema() = %(schema)s
    FOR UPDATE
),
moved AS (
    UPDATE jobs j
    SET state = h.state, handbacks = h.handbacks,
        run_after = CASE WHEN h.state = 'pending' THEN (SELECT now FROM clock) ELSE j.run_after END,
        finished_at = CASE WHEN h.state = 'failed' THEN (SELECT now FROM clock) END,
        last_error = CASE WHEN h.state = 'failed'
                          THEN 'handed back ' || h.handbacks || ' times, the most allowed: '
                               || 'the handler may outlive the workers'' shutdown timeout '
                               || '(last: ' || %(reason)s::text || ')'
                          ELSE j.last_error END,
        lease_token = NULL, locked_until = NULL, locked_by = NULL
    FROM held h
    WHERE j.id = h.id
    RETURNING j.state
),
closed AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT now FROM clock), outcome = 'released', error = %(reason)s::text
    FROM held h
    WHERE a.job_id = h.id AND a.lease_token = %(lease_token)s
)
SELECT (SELECT state::text FROM moved) AS state, current_schema() AS schema;

-- name: retry
-- Put failed jobs back to pending with a fresh attempt budget, same job ids, one audit row each.
-- Each job is named with its tenant: another tenant's job is left alone. A bulk retry
-- (queue.deadletter) also gives the finished_at its dry run listed: a job retried and
-- failed again since is not the failure the operator chose, and is left alone too.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
given AS (
    SELECT *
    FROM unnest(%(job_ids)s::bigint[], %(tenant_ids)s::integer[], %(failed_at)s::timestamptz[])
         AS g (job_id, tenant_id, failed_at)
),
target AS (
    SELECT j.id, j.tenant_id, j.attempts, j.max_attempts, j.last_error,
           -- A fresh budget is the number of attempts the job was submitted with: its
           -- max_attempts before the first manual retry, as recorded by that retry.
           coalesce(%(attempts)s::integer,
                    (SELECT (a.detail ->> 'added_attempts')::integer FROM job_audit a
                     WHERE a.job_id = j.id AND a.action = 'retry'
                     ORDER BY a.id LIMIT 1),
                    j.max_attempts) AS added
    FROM jobs j
    JOIN given g ON g.job_id = j.id AND g.tenant_id = j.tenant_id
    WHERE j.state = 'failed' AND (g.failed_at IS NULL OR j.finished_at = g.failed_at)
      -- A dedupe key another job holds now (pending or running) stays with it: this job is
      -- left alone; of several given jobs with one key, only the newest goes back.
      AND (j.dedupe_key IS NULL
           OR NOT EXISTS (SELECT 1 FROM jobs o
                          WHERE o.tenant_id = j.tenant_id AND o.dedupe_key = j.dedupe_key
                            AND (o.state IN ('pending', 'running')
                                 OR o.state = 'failed' AND o.id > j.id
                                    AND o.id = ANY (%(job_ids)s::bigint[]))))
    ORDER BY j.id
    FOR UPDATE OF j
),
-- Hand-backs start again from 0 too, so every attempt so far counts and `added` are left.
moved AS (
    UPDATE jobs j
    SET state = 'pending', max_attempts = t.attempts + t.added, handbacks = 0,
        run_after = (SELECT now FROM clock), finished_at = NULL
    FROM target t
    WHERE j.id = t.id
    RETURNING j.id
),
audited AS (
    INSERT INTO job_audit (job_id, tenant_id, actor, action, reason, at, detail)
    SELECT id, tenant_id, %(actor)s, 'retry', %(reason)s, (SELECT now FROM clock),
           jsonb_build_object('previous_attempts', attempts,
                              'previous_max_attempts', max_attempts,
                              'added_attempts', added,
                              'last_error', last_error)
           || CASE WHEN %(filter)s::jsonb IS NULL THEN '{}'::jsonb
                   ELSE jsonb_build_object('bulk_filter', %(filter)s::jsonb) END
    FROM target
)
SELECT coalesce((SELECT array_agg(id ORDER BY id) FROM moved), '{}') AS retried;

-- name: status
-- One job of one tenant, read from the jobs table (the source of truth) with its result.
SELECT j.id AS job_id, j.kind, j.state::text AS state, j.attempts, j.handbacks,
       j.max_attempts, j.last_error, r.output, j.run_after, j.created_at, j.finished_at
FROM jobs j
LEFT JOIN job_results r ON r.job_id = j.id
WHERE j.id = %(job_id)s AND j.tenant_id = %(tenant_id)s;

-- name: history
-- The attempt rows (of one job, or of all jobs), in order.
SELECT job_id, attempt, lease_token, worker, started_at, finished_at, outcome, error,
       rejected_report, rejected_at
FROM job_attempts
WHERE %(job_id)s::bigint IS NULL OR job_id = %(job_id)s::bigint
ORDER BY job_id, attempt;

-- name: audit
-- The audit rows (of one job, or of all jobs), in order.
SELECT id, job_id, tenant_id, actor, action, reason, at, detail
FROM job_audit
WHERE %(job_id)s::bigint IS NULL OR job_id = %(job_id)s::bigint
ORDER BY id;
