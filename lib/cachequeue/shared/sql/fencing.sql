-- The resource side of fencing tokens (cachequeue.shared.fencing, chapter 09).
-- reset_schema() applies this file with search_path set to the chapter's schema.

-- One row per protected resource: its value and the largest fencing token that wrote it.
-- A writer holding a lock (cachequeue.shared.lock) passes the token of its acquisition; a
-- write with a smaller token than `fence` comes from a holder whose lock has expired and
-- been acquired again since, and is refused (queries.sql: fenced_write).
CREATE TABLE fenced_resources (
    resource   text PRIMARY KEY CHECK (resource <> ''),
    fence      bigint NOT NULL CHECK (fence > 0),
    value      jsonb NOT NULL,
    written_at timestamptz NOT NULL DEFAULT cq_now()
);
