-- A stand-in broker for the outbox lab (cachequeue.course.procs.relaylab): every message it
-- accepted, in order. A real broker (Kafka, RabbitMQ, a webhook) is outside PostgreSQL; this
-- table is written on its own connection, so a message it accepted stays accepted whatever
-- happens to the relay's transaction, exactly like a message a real broker acknowledged.

-- name: install
-- The broker's message log.
CREATE TABLE IF NOT EXISTS broker_messages (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id uuid NOT NULL,
    topic    text NOT NULL,
    payload  jsonb NOT NULL
);

-- name: send
-- The broker accepts one message (committed at once: an acknowledged send).
INSERT INTO broker_messages (event_id, topic, payload)
VALUES (%(event_id)s, %(topic)s, %(payload)s::jsonb);

-- name: messages
-- Every message the broker accepted, in order (duplicates included).
SELECT seq, event_id, topic, payload
FROM broker_messages
ORDER BY seq;

-- name: clear
-- Empty the outbox, the inbox and the broker's log (between two demonstrations).
TRUNCATE outbox, inbox, broker_messages;

-- name: session
-- How the server sees one session now: its state and when its transaction began (NULL: none open).
SELECT state, xact_start
FROM pg_stat_activity
WHERE pid = %(pid)s;
