-- Statements of cachequeue.queue.schema (installing the queue; its DDL is queue.sql).

-- name: lock
-- Serialise installs into one schema across processes; held until commit.
SELECT pg_advisory_xact_lock(hashtext('cachequeue.queue.install.' || current_schema()));

-- name: installed
-- Whether the current schema has the queue's jobs table.
SELECT to_regclass(quote_ident(current_schema()) || '.jobs') IS NOT NULL;
