-- The resource side of fencing tokens (cachequeue.shared.fencing, chapter 10).
-- fencing.install(conn) applies this file in the connection's current schema (a chapter's,
-- after db.reset_schema); IF NOT EXISTS makes that safe to repeat.

-- One row per protected resource: its value and the largest fencing token that wrote it.
-- A writer holding a lock (cachequeue.shared.lock) passes the token of its acquisition; a
-- write with a smaller token than `fence` comes from a holder whose lock has expired and
-- been acquired again since, and is refused (queries.sql: fenced_write).
CREATE TABLE IF NOT EXISTS fenced_resources (
    resource   text PRIMARY KEY CHECK (resource <> ''),
    fence      bigint NOT NULL CHECK (fence > 0),
    value      jsonb NOT NULL,
    written_at timestamptz NOT NULL DEFAULT cq_now()
);

-- Fencing tokens issued by the database itself (fencing.Counter): one row per lock name,
-- `last` the largest token handed out. Incremented in a committed transaction before the
-- token is used, so a token never repeats, whatever happens to Redis.
CREATE TABLE IF NOT EXISTS fence_counters (
    name text PRIMARY KEY CHECK (name <> ''),
    last bigint NOT NULL CHECK (last > 0)
);
