-- The transactional outbox and the consumer's inbox (cachequeue.queue.outbox).
-- The relay follows the queue's rule: claim (a short transaction), commit, publish with no
-- transaction open, then mark. A claim is a lease on the events (relay_until), not a lock
-- held while publishing: a relay that dies before marking leaves them to the next relay
-- once the lease has expired, which publishes them again (at least once).

-- name: install
-- The outbox (events written with the business change) and the inbox (event ids a consumer has handled).
CREATE TABLE IF NOT EXISTS outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    topic        text NOT NULL CHECK (topic <> ''),
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT cq_now(),
    -- A relay is publishing it until then (claim); NULL or past: any relay may take it.
    relay_until  timestamptz,
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

-- name: claim
-- Give the oldest unpublished events that no relay holds to this relay for %(lease)s seconds.
-- SKIP LOCKED: two relays claiming at once take different events. The claim commits at
-- once (one statement), so no lock is held while the events are published.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
free AS (
    SELECT id
    FROM outbox
    WHERE published_at IS NULL
      AND (relay_until IS NULL OR relay_until <= (SELECT now FROM clock))
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE outbox o
    SET relay_until = (SELECT now FROM clock) + %(lease)s::float8 * interval '1 second'
    FROM free f
    WHERE o.id = f.id
    RETURNING o.id, o.event_id, o.topic, o.payload
)
SELECT id, event_id, topic, payload FROM claimed ORDER BY id;

-- name: mark
-- Mark published events (after the broker accepted them).
UPDATE outbox SET published_at = cq_now(), relay_until = NULL
WHERE id = ANY (%(ids)s::bigint[]) AND published_at IS NULL;

-- name: unclaim
-- Give claimed events back at once (publishing failed): the next pass may take them.
UPDATE outbox SET relay_until = NULL
WHERE id = ANY (%(ids)s::bigint[]) AND published_at IS NULL;

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
