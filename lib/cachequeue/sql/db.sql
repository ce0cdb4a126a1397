-- Statements of cachequeue.db (schema DDL is composed there with psycopg.sql.Identifier,
-- since a schema name cannot be a query parameter).

-- name: lock_schema
-- Serialise resets of one schema across processes (two runs of one notebook); held until commit.
SELECT pg_advisory_xact_lock(hashtext('cachequeue.schema.' || %(schema)s));

-- name: set_clock
-- Freeze this session's cq_now() at an instant, or release it with an empty string.
SELECT set_config('cachequeue.now', %(instant)s, false);

-- name: server_version
-- The server's full version string, e.g. 'PostgreSQL 18.1 on x86_64-pc-linux-gnu ...'.
SELECT version();

-- name: server_version_number
-- The short version, e.g. '18.1' or '15.19 (Debian 15.19-0+deb12u1)'.
SELECT current_setting('server_version');
