-- Schedules that fire once (cachequeue.queue.schedules): periodic jobs from a cron
-- expression, enqueued by any number of scheduler processes, each fire time exactly once.
-- The cron arithmetic (which instants fire, in which time zone) is done in Python by
-- cronsim; PostgreSQL holds the one thing that must not be left to a process: the unique
-- key per (schedule, fire time), schedule_fires' primary key. A scheduler that was paused
-- or killed between reading the clock and inserting cannot enqueue a fire time twice, and
-- there is no leader to pause.

-- name: install
-- The schedules and their fires, unless they exist.
CREATE TABLE IF NOT EXISTS schedules (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    cron         text NOT NULL CHECK (length(cron) BETWEEN 1 AND 200),
    timezone     text NOT NULL CHECK (length(timezone) BETWEEN 1 AND 64),
    tenant_id    integer NOT NULL,
    kind         text NOT NULL REFERENCES job_kinds (kind),
    payload      jsonb NOT NULL,
    -- The missed-fire policy: how many fire times older than the latest one that came
    -- may still be enqueued late. 0 = skip (only the latest), n = catch up n more.
    catch_up     integer NOT NULL CHECK (catch_up BETWEEN 0 AND 100),
    max_attempts integer NOT NULL CHECK (max_attempts >= 1),
    -- Only fire times after this instant fire (the creation time by the database clock).
    starts_at    timestamptz NOT NULL,
    created_at   timestamptz NOT NULL
);

-- One row per fire time that was enqueued, with the job it became. The primary key is
-- the whole point: an INSERT ... ON CONFLICT DO NOTHING on it, in the same statement as
-- the job's insert, lets one scheduler enqueue a fire time and every other one do nothing.
-- No foreign key to jobs: retention may delete the job, the record of the fire stays.
CREATE TABLE IF NOT EXISTS schedule_fires (
    schedule_id  bigint NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    fire_at      timestamptz NOT NULL,
    job_id       bigint NOT NULL,
    enqueued_at  timestamptz NOT NULL,
    scheduler    text NOT NULL,
    PRIMARY KEY (schedule_id, fire_at)
);

-- name: create
-- A new schedule starting now (database clock); nothing when the name is taken.
INSERT INTO schedules (name, cron, timezone, tenant_id, kind, payload, catch_up,
                       max_attempts, starts_at, created_at)
SELECT %(name)s, %(cron)s, %(timezone)s, %(tenant_id)s, %(kind)s, %(payload)s::jsonb,
       %(catch_up)s, %(max_attempts)s, clock.now, clock.now
FROM (SELECT cq_now() AS now) AS clock
ON CONFLICT (name) DO NOTHING
RETURNING id;

-- name: lock
-- Serialise creates (a rare operation), so the count below stays true until commit.
LOCK TABLE schedules IN SHARE ROW EXCLUSIVE MODE;

-- name: before_create
-- Whether the kind exists, and how many schedules there are.
SELECT EXISTS (SELECT 1 FROM job_kinds WHERE kind = %(kind)s), (SELECT count(*) FROM schedules);

-- name: delete
-- Remove a schedule and the record of its fires (its jobs stay in the queue).
DELETE FROM schedules WHERE name = %(name)s RETURNING id;

-- name: list
-- The schedules, by name, with the database clock's reading.
SELECT s.id, s.name, s.cron, s.timezone, s.tenant_id, s.kind, s.payload, s.catch_up,
       s.max_attempts, s.starts_at, s.created_at, clock.now
FROM schedules s, (SELECT cq_now() AS now) AS clock
ORDER BY s.name
LIMIT %(limit)s;

-- name: now
-- The database clock's reading.
SELECT cq_now();

-- name: enqueue
-- Enqueue the planned fire times still inside their window, each once: its fire row and its job in one statement.
-- A fire time t is enqueued only while cq_now() lies in [t, expires_at): expires_at is the
-- (catch_up + 1)-th fire time after t, so a scheduler that was paused since it planned
-- cannot enqueue a fire time the policy has since given up. The job id is drawn from the
-- jobs' own identity sequence first, so the fire row names its job in the same statement;
-- a conflict wastes one id (ids have gaps anyway). The job's idempotency key is a second
-- guard ("schedule:<id>:<fire time in UTC>"), unique per tenant by the queue's own index.
WITH clock AS MATERIALIZED (SELECT cq_now() AS now),
due AS (
    SELECT d.schedule_id, d.fire_at
    FROM unnest(%(schedule_ids)s::bigint[], %(fire_ats)s::timestamptz[],
                %(expires_ats)s::timestamptz[]) AS d (schedule_id, fire_at, expires_at)
    JOIN schedules s ON s.id = d.schedule_id
    CROSS JOIN clock
    WHERE d.fire_at <= clock.now AND clock.now < d.expires_at AND d.fire_at > s.starts_at
    ORDER BY d.schedule_id, d.fire_at
),
fired AS (
    INSERT INTO schedule_fires (schedule_id, fire_at, job_id, enqueued_at, scheduler)
    SELECT due.schedule_id, due.fire_at, nextval(pg_get_serial_sequence('jobs', 'id')),
           clock.now, %(scheduler)s
    FROM due CROSS JOIN clock
    ON CONFLICT (schedule_id, fire_at) DO NOTHING
    RETURNING schedule_id, fire_at, job_id
),
queued AS (
    INSERT INTO jobs (id, tenant_id, kind, payload, idempotency_key, max_attempts, run_after)
    OVERRIDING SYSTEM VALUE
    SELECT f.job_id, s.tenant_id, s.kind, s.payload,
           'schedule:' || s.id || ':'
               || to_char(f.fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           s.max_attempts, clock.now
    FROM fired f JOIN schedules s ON s.id = f.schedule_id CROSS JOIN clock
    RETURNING id
)
SELECT s.name, f.fire_at, f.job_id
FROM fired f JOIN schedules s ON s.id = f.schedule_id
WHERE f.job_id IN (SELECT id FROM queued)
ORDER BY s.name, f.fire_at;

-- name: fires
-- The fires recorded, newest first (of one schedule, or of all when the name is NULL).
SELECT s.name, f.fire_at, f.job_id, f.enqueued_at, f.scheduler
FROM schedule_fires f JOIN schedules s ON s.id = f.schedule_id
WHERE %(name)s::text IS NULL OR s.name = %(name)s::text
ORDER BY f.fire_at DESC, s.name
LIMIT %(limit)s;
