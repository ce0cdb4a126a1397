-- The transactional outbox and the consumer's inbox (cachequeue.queue.outbox).

-- name: install
-- The outbox (events written with the business change) and the inbox (event ids a consumer has handled).
CREATE TABLE IF NOT EXISTS outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    topic        text NOT NULL CHECK (topic <> ''),
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT cq_now(),
    published_at timestamptz
);
-- The relay reads only unpublished events, oldest first.
CREATE INDEX IF NOT EXISTS outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
CREATE TABLE IF NOT EXISTS inbox (
    event_id    uuid PRIMARY KEY,
    topic       text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT cq_now()
);

-- name: add
-- Write one event; run it in the transaction of the business change it announces.
INSERT INTO outbox (topic, payload)
VALUES (%(topic)s, %(payload)s::jsonb)
RETURNING event_id;

-- name: pending
-- The oldest unpublished events, locked so that two relays never hold the same one.
SELECT id, event_id, topic, payload
FROM outbox
WHERE published_at IS NULL
ORDER BY id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: mark
-- Mark published events (after the broker accepted them).
UPDATE outbox SET published_at = cq_now()
WHERE id = ANY (%(ids)s::bigint[]);

-- name: accept
-- A consumer records an event id; returns a row only the first time (a duplicate returns none).
INSERT INTO inbox (event_id, topic)
VALUES (%(event_id)s, %(topic)s)
ON CONFLICT (event_id) DO NOTHING
RETURNING event_id;

-- name: counts
-- Events written, published, and still waiting.
SELECT count(*) AS written, count(published_at) AS published,
       count(*) - count(published_at) AS waiting
FROM outbox;
