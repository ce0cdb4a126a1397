-- Results of jobs consumed from a JetStream stream (cachequeue.broker), fenced per delivery.
-- JetStream has no lease token: once ack_wait has passed it delivers the message again,
-- possibly while the first delivery still runs. Each delivery registers itself here first
-- (stream sequence + the delivery count from the message's metadata); a result is accepted
-- only from the newest registered delivery, and only once per message.

-- name: install
-- The delivery register, the results and the dead letters of broker-consumed jobs.
CREATE TABLE IF NOT EXISTS broker_deliveries (
    stream      text NOT NULL,
    stream_seq  bigint NOT NULL CHECK (stream_seq > 0),
    -- The newest delivery that began (num_delivered of its message, 1-based).
    delivery    integer NOT NULL CHECK (delivery > 0),
    msg_id      text,
    kind        text NOT NULL,
    worker      text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, stream_seq)
);
CREATE TABLE IF NOT EXISTS broker_results (
    stream      text NOT NULL,
    stream_seq  bigint NOT NULL,
    delivery    integer NOT NULL,
    msg_id      text,
    kind        text NOT NULL,
    result      jsonb,
    worker      text NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, stream_seq)
);
CREATE TABLE IF NOT EXISTS broker_dead_letters (
    stream      text NOT NULL,
    stream_seq  bigint NOT NULL,
    deliveries  integer NOT NULL,
    msg_id      text,
    kind        text NOT NULL,
    payload     jsonb,
    reason      text NOT NULL CHECK (reason IN ('failed', 'max_deliveries')),
    error       text,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, stream_seq)
);

-- name: begin
-- Register a delivery as the newest one of its message; says what the worker should do:
-- 'run' (it is the newest), 'done' (a result is already in: ack, do not run again) or
-- 'stale' (a newer delivery began: this one does nothing).
WITH done AS (
    SELECT 1 FROM broker_results WHERE stream = %(stream)s AND stream_seq = %(seq)s
    UNION ALL
    SELECT 1 FROM broker_dead_letters WHERE stream = %(stream)s AND stream_seq = %(seq)s
),
registered AS (
    INSERT INTO broker_deliveries AS d (stream, stream_seq, delivery, msg_id, kind, worker)
    SELECT %(stream)s, %(seq)s, %(delivery)s, %(msg_id)s, %(kind)s, %(worker)s
    WHERE NOT EXISTS (SELECT 1 FROM done)
    ON CONFLICT (stream, stream_seq) DO UPDATE
        SET delivery = EXCLUDED.delivery, worker = EXCLUDED.worker, started_at = now()
        WHERE d.delivery < EXCLUDED.delivery
    RETURNING 1
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM done) THEN 'done'
            WHEN EXISTS (SELECT 1 FROM registered) THEN 'run'
            ELSE 'stale' END;

-- name: record
-- Accept a result only from the newest registered delivery of its message, only once, and
-- never for a message already recorded as a dead letter.
-- The register row is locked (FOR UPDATE): a newer delivery that registers meanwhile
-- waits for this statement, or this one sees its newer count and inserts nothing.
WITH newest AS (
    SELECT 1 FROM broker_deliveries
    WHERE stream = %(stream)s AND stream_seq = %(seq)s AND delivery = %(delivery)s
    FOR UPDATE
)
INSERT INTO broker_results (stream, stream_seq, delivery, msg_id, kind, result, worker)
SELECT %(stream)s, %(seq)s, %(delivery)s, %(msg_id)s, %(kind)s, %(result)s::jsonb, %(worker)s
WHERE EXISTS (SELECT 1 FROM newest)
  AND NOT EXISTS (SELECT 1 FROM broker_dead_letters WHERE stream = %(stream)s AND stream_seq = %(seq)s)
ON CONFLICT (stream, stream_seq) DO NOTHING
RETURNING stream_seq;

-- name: dead_letter
-- Record a message that will not be delivered again (its last attempt failed, or JetStream
-- gave up after max_deliver deliveries); once per message, never beside a result.
INSERT INTO broker_dead_letters (stream, stream_seq, deliveries, msg_id, kind, payload, reason, error)
SELECT %(stream)s, %(seq)s, %(deliveries)s, %(msg_id)s, %(kind)s, %(payload)s::jsonb, %(reason)s, %(error)s
WHERE NOT EXISTS (SELECT 1 FROM broker_results WHERE stream = %(stream)s AND stream_seq = %(seq)s)
ON CONFLICT (stream, stream_seq) DO NOTHING
RETURNING stream_seq;

-- name: counts
-- How many results and dead letters one stream has, and how many deliveries began.
SELECT (SELECT count(*) FROM broker_results WHERE stream = %(stream)s) AS results,
       (SELECT count(*) FROM broker_dead_letters WHERE stream = %(stream)s) AS dead_letters,
       (SELECT count(*) FROM broker_deliveries WHERE stream = %(stream)s) AS messages,
       (SELECT coalesce(sum(delivery), 0) FROM broker_deliveries WHERE stream = %(stream)s) AS deliveries;

-- name: results
-- One stream's results in stream order.
SELECT stream_seq, delivery, msg_id, kind, result, worker, finished_at
FROM broker_results WHERE stream = %(stream)s ORDER BY stream_seq;

-- name: dead_letters
-- One stream's dead letters in stream order.
SELECT stream_seq, deliveries, msg_id, kind, payload, reason, error, recorded_at
FROM broker_dead_letters WHERE stream = %(stream)s ORDER BY stream_seq;
