-- A global rate limit per job kind (cachequeue.queue.ratelimit): a token bucket kept in one
-- row, so every worker process on every host draws from the same bucket.

-- name: install
-- The buckets table (IF NOT EXISTS: a fresh chapter schema does not have it).
CREATE TABLE IF NOT EXISTS rate_limits (
    kind       text PRIMARY KEY REFERENCES job_kinds (kind),
    per_second float8 NOT NULL CHECK (per_second > 0),
    burst      float8 NOT NULL CHECK (burst >= 1),
    tokens     float8 NOT NULL CHECK (tokens >= 0),
    updated_at timestamptz NOT NULL
);

-- name: set_limit
-- Create or replace the bucket of a kind; it starts full, at this instant.
INSERT INTO rate_limits (kind, per_second, burst, tokens, updated_at)
VALUES (%(kind)s, %(per_second)s, %(burst)s, %(burst)s, cq_now())
ON CONFLICT (kind) DO UPDATE
SET per_second = EXCLUDED.per_second, burst = EXCLUDED.burst, tokens = EXCLUDED.tokens,
    updated_at = EXCLUDED.updated_at;

-- name: take
-- Refill the bucket for the time passed, then take up to %(want)s whole tokens; return how many.
-- The row lock serialises takers; each sees the tokens the previous one left.
WITH clock AS MATERIALIZED (
    SELECT cq_now() AS now
),
refilled AS (
    SELECT kind,
           least(burst, tokens + per_second * greatest(0, extract(epoch FROM
                 (SELECT now FROM clock) - updated_at))) AS tokens
    FROM rate_limits
    WHERE kind = %(kind)s
    FOR UPDATE
),
taken AS (
    UPDATE rate_limits r
    SET tokens = f.tokens - least(%(want)s, floor(f.tokens)),
        updated_at = greatest(r.updated_at, (SELECT now FROM clock))
    FROM refilled f
    WHERE r.kind = f.kind
    RETURNING least(%(want)s, floor(f.tokens))::integer AS granted
)
SELECT (SELECT granted FROM taken) AS granted;

-- name: give_back
-- Return tokens a taker could not use (it found fewer jobs than it took tokens for).
UPDATE rate_limits
SET tokens = least(burst, tokens + %(count)s)
WHERE kind = %(kind)s;
