-- The job queue's persistent tables, applied by cachequeue.queue.install(conn) in the current
-- schema (after the ground floor's clock.sql, which db.reset_schema applies first).

-- Lifecycle of a job. Who moves a job into and out of each state:
--   pending   : submit() creates it; fail() puts it back (retryable error, attempts left);
--               release() puts it back at once (a hand-back is not a failure: handbacks
--               goes up by one and the attempt does not count against max_attempts);
--               retry() puts a failed job back by hand. claim() moves it to running.
--   running   : claim() sets it with a fresh lease token and locked_until. finish() moves
--               it to done, fail() to pending or failed, cancel() to cancelled, release()
--               (a worker shutting down hands it back) to pending at once, or to failed on
--               the hand-back past the cap. When the lease expires, claim() may take it
--               again (a new attempt, a new token).
--   done      : finish() or finish_many() only, in the statement that writes the result
--               row. Final.
--   failed    : fail() when the error is permanent, the attempts are used up or the
--               deadline has passed; claim() when an expired lease had no attempts left;
--               release() when the job was already handed back the most times allowed
--               (limits.MAX_HANDBACKS). Only an audited retry() moves it back to pending
--               (with max_attempts raised and handbacks back to 0, so attempt numbers
--               continue and the job id stays).
--   cancelled : cancel(), from pending or running. Final; a late finish() is rejected.
CREATE TYPE job_state AS ENUM ('pending', 'running', 'done', 'failed', 'cancelled');

-- The kinds of work the queue accepts; submit() of any other kind is refused. A new queue
-- accepts none: whoever runs the work registers its kinds (queue.kinds.register; the
-- course registers its own when it builds a chapter's schema, a worker those of its handlers).
CREATE TABLE job_kinds (
    kind        text PRIMARY KEY,
    description text NOT NULL
);

-- A job's place in the claim order, as an instant: run_after moved earlier by one second
-- per priority level. Claimed lowest first, so a job of priority p due at t goes before a
-- job of priority q due at t' exactly when t - p < t' - q (in seconds): priority is a head
-- start, and waiting ages a job the same way (its effective priority grows by one level per
-- second it waits once due). A job never waits behind one of higher priority q that became
-- due more than (q - p) seconds after it: with priorities 0..100, at most 100 s worth of
-- later jobs overtake it (jobs.MAX_PRIORITY, jobs.PRIORITY_AGING). A value per row, not per
-- claim, so the partial index jobs_runnable keeps the claim an index scan.
-- IMMUTABLE is true: the interval has no day or month part, so no time zone enters.
CREATE FUNCTION job_rank(run_after timestamptz, priority smallint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT run_after - priority * interval '1 second'
$$;

CREATE TABLE jobs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       integer NOT NULL,
    kind            text NOT NULL REFERENCES job_kinds (kind),
    payload         jsonb NOT NULL,
    idempotency_key text,
    -- priority: 0 (the default, what every job had before priorities) to 100, higher first
    -- with aging (job_rank). dedupe_key: unique per tenant only while the job is pending or
    -- running (jobs_dedupe), unlike idempotency_key, which is unique for ever.
    priority        smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 100),
    dedupe_key      text,
    state           job_state NOT NULL DEFAULT 'pending',
    -- attempts: how many times the job was claimed (the number of its latest attempt row).
    -- handbacks: how many of those attempts a stopping worker handed back (release())
    -- since the job was submitted or last retried by hand; they do not count, so the
    -- attempts used up are attempts - handbacks, which never exceeds max_attempts.
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    handbacks       integer NOT NULL DEFAULT 0 CHECK (handbacks >= 0),
    max_attempts    integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    run_after       timestamptz NOT NULL DEFAULT cq_now(),
    deadline        timestamptz,
    created_at      timestamptz NOT NULL DEFAULT cq_now(),
    finished_at     timestamptz,
    lease_token     uuid,
    locked_by       text,
    locked_until    timestamptz,
    last_error      text,
    -- A running job always has a lease; no other state keeps one.
    CONSTRAINT lease_iff_running CHECK (
        (state = 'running') = (lease_token IS NOT NULL AND locked_until IS NOT NULL)
    ),
    CONSTRAINT attempts_capped CHECK (handbacks <= attempts
                                      AND attempts - handbacks <= max_attempts)
);

-- One job per (tenant, idempotency key): a repeated submit returns the first job.
CREATE UNIQUE INDEX jobs_idempotency ON jobs (tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- One pending or running job per (tenant, dedupe key): a submit while one is active returns
-- it; once it is done, failed or cancelled it leaves this index and the key is free again.
-- Rows without a key are not in it, so it costs the other jobs nothing.
CREATE UNIQUE INDEX jobs_dedupe ON jobs (tenant_id, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND state IN ('pending', 'running');
-- The claim reads only these two small partial indexes, however many finished jobs pile up.
-- Pending jobs in claim order (job_rank: run_after less the priority's head start).
CREATE INDEX jobs_runnable ON jobs (job_rank(run_after, priority), id) WHERE state = 'pending';
CREATE INDEX jobs_lease_expiry ON jobs (locked_until, id) WHERE state = 'running';

-- One row per attempt: the job id names the user's intent, the lease token names one try.
-- claim() inserts the row (outcome NULL while running); finish() closes it 'done', fail()
-- 'retry' or 'failed', cancel() 'cancelled', release() 'released' (handed back by a worker
-- that stopped; counted in jobs.handbacks), and the claim that takes over or fails an
-- expired lease closes it 'expired' at the old locked_until.
-- A holder that reports after it lost its lease (the GC-pause case: it was stopped, its
-- lease expired, someone else took over) is refused by the lease token; finish() or fail()
-- then note the refused report on the holder's own attempt row (rejected_report, when),
-- and change nothing else.
CREATE TABLE job_attempts (
    job_id          bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt         integer NOT NULL CHECK (attempt >= 1),
    lease_token     uuid NOT NULL UNIQUE,
    worker          text,
    started_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    outcome         text CHECK (outcome IN ('done', 'retry', 'failed', 'expired', 'cancelled',
                                            'released')),
    error           text,
    rejected_report text CHECK (rejected_report IN ('finish', 'fail')),
    rejected_at     timestamptz,
    PRIMARY KEY (job_id, attempt),
    CONSTRAINT rejected_has_time CHECK ((rejected_report IS NULL) = (rejected_at IS NULL))
)
-- An attempt row is written twice: opened by the claim, closed by the report a moment later,
-- changing no indexed column. Half of each page is left free, so that the second write can
-- be a HOT update (the new version on the same page, no new index entries): 86 % of the
-- closes were HOT instead of 2 % at the default fillfactor (100), and a finish_many of
-- 1,000 rows cost 18.4 instead of 21.7 µs per job (bench/worker_throughput.py's machine).
WITH (fillfactor = 50);

-- The result of a job: at most one row per job, written in finish()'s transaction.
CREATE TABLE job_results (
    job_id      bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id   integer NOT NULL,
    output      jsonb NOT NULL,
    lease_token uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT cq_now()
);

-- Manual interventions (retry, cancel by an operator): who, what, why, when.
CREATE TABLE job_audit (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id    bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id integer NOT NULL,
    actor     text NOT NULL CHECK (actor <> ''),
    action    text NOT NULL,
    reason    text NOT NULL CHECK (reason <> ''),
    at        timestamptz NOT NULL DEFAULT cq_now(),
    detail    jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX job_audit_job ON job_audit (job_id);

-- Notifications: the contract that workers (wake-up) and the HTTP service (server-sent
-- events) rely on (CONTRIBUTING.md, "Notifications"). pg_notify is sent on the channel
-- job_channel(<schema>) (`cq_jobs_<schema>`, or `cq_jobs_<md5 of schema>` when that would
-- exceed PostgreSQL's 63-byte channel names) with a small JSON payload:
--     {"job_id": 7, "tenant_id": 1, "kind": "noop", "state": "pending", "attempts": 0}
-- What notifies:
--   * every insert, and every change INTO pending or cancelled (fail with a retry, release,
--     an operator's retry, cancel): the wake-ups that workers need;
--   * for a WATCHED job only (`watched`, set by queue.notify.watch: someone streams its
--     progress), every other change of its state or attempts too: a claim, the takeover of
--     an expired lease, done, failed. Watching a pending job notifies it once more, with
--     "watch": true (the watch's row lock may have made a claim skip the job: workers look
--     again; the watcher reads the job itself, so the HTTP service's hub ignores it).
-- Why not every change: PostgreSQL serialises the commits of all notifying transactions on
-- one lock (held through the WAL flush), so a notification on every claim and finish made
-- every worker's commits queue behind each other (issue 20; chapter 11 measures it).
-- Notifications are delivered at commit, to sessions that LISTEN (queue.notify.listen);
-- a rolled-back change sends none. They are a hint to look, never the record: a listener
-- that was disconnected misses them, so readers re-read the jobs table after (re)connecting.
-- A column of its own, added here rather than in CREATE TABLE jobs: it belongs to the
-- notification contract. A watch is never taken back (a stream that closes early leaves
-- its job notifying a few more times: a hint too many, never one too few).
ALTER TABLE jobs ADD COLUMN watched boolean NOT NULL DEFAULT false;

CREATE FUNCTION job_channel(schema_name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length('cq_jobs_' || schema_name) <= 63
                THEN 'cq_jobs_' || schema_name
                ELSE 'cq_jobs_' || md5(schema_name) END
$$;

-- search_path is pinned to this schema, so the trigger finds job_channel() whatever the
-- search_path of the session that changed the row. TG_ARGV[0] = 'watch' marks the
-- notification that a watch itself sends.
CREATE FUNCTION jobs_notify() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_NARGS > 0 AND TG_ARGV[0] = 'watch' THEN
        PERFORM pg_notify(job_channel(TG_TABLE_SCHEMA), json_build_object(
            'job_id', NEW.id, 'tenant_id', NEW.tenant_id, 'kind', NEW.kind,
            'state', NEW.state, 'attempts', NEW.attempts, 'watch', true)::text);
    ELSE
        PERFORM pg_notify(job_channel(TG_TABLE_SCHEMA), json_build_object(
            'job_id', NEW.id, 'tenant_id', NEW.tenant_id, 'kind', NEW.kind,
            'state', NEW.state, 'attempts', NEW.attempts)::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_notify();
-- The wake-ups, for every job.
CREATE TRIGGER jobs_notify_wake AFTER UPDATE OF state ON jobs
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state IN ('pending', 'cancelled'))
    EXECUTE FUNCTION jobs_notify();
-- The progress of watched jobs. The WHEN clause reads the new row only, so an unwatched
-- job's claim or finish calls no function at all. An UPDATE in READ COMMITTED computes the
-- new row from the newest committed version, so a change made after a watch committed
-- always sees watched = true; one made before it held the row lock that the watch waited
-- for, so the watcher's next read sees it.
CREATE TRIGGER jobs_notify_progress AFTER UPDATE OF state, attempts ON jobs
    FOR EACH ROW
    WHEN (NEW.watched AND NEW.state NOT IN ('pending', 'cancelled')
          AND (OLD.state IS DISTINCT FROM NEW.state OR OLD.attempts IS DISTINCT FROM NEW.attempts))
    EXECUTE FUNCTION jobs_notify();
CREATE TRIGGER jobs_notify_watch AFTER UPDATE OF watched ON jobs
    FOR EACH ROW
    WHEN (NEW.watched AND NOT OLD.watched AND NEW.state = 'pending')
    EXECUTE FUNCTION jobs_notify('watch');
