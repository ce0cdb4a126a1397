-- The queue's health as the database sees it (cachequeue.queue.health): who holds the MVCC
-- horizon back, and what the jobs table carries.

-- name: horizon_holders
-- What holds the horizon of this database back, oldest first: backends (a snapshot or a transaction id), replication slots, prepared transactions.
-- A backend holds it from its snapshot (backend_xmin: a running statement, a REPEATABLE READ
-- transaction) or, once it wrote, from its transaction id (backend_xid), whichever is older.
-- Slots (physical: the standby's xmin with hot_standby_feedback; logical: catalog_xmin,
-- which holds back the system catalogs only) and prepared transactions survive a restart.
-- The session asking is left out: its own query holds a snapshot while it runs.
SELECT 'backend' AS source, pid, coalesce(nullif(application_name, ''), usename::text) AS name,
       state, age(coalesce(backend_xmin, backend_xid)) AS xmin_age,
       extract(epoch FROM clock_timestamp() - xact_start)::float8 AS seconds,
       left(query, 120) AS query
FROM pg_stat_activity
WHERE datname = current_database()
  AND pid <> pg_backend_pid()
  AND coalesce(backend_xmin, backend_xid) IS NOT NULL
UNION ALL
SELECT 'replication_slot', active_pid, slot_name::text, slot_type,
       greatest(age(xmin), age(catalog_xmin)), NULL, NULL
FROM pg_replication_slots
WHERE coalesce(xmin, catalog_xmin) IS NOT NULL
  AND (database IS NULL OR database = current_database())
UNION ALL
SELECT 'prepared', NULL, gid, 'prepared', age(transaction),
       extract(epoch FROM clock_timestamp() - prepared)::float8, NULL
FROM pg_prepared_xacts
WHERE database = current_database()
ORDER BY xmin_age DESC, pid
LIMIT %(limit)s;

-- name: table_health
-- The jobs table of the current schema: live and dead tuples (statistics, asynchronous), sizes, autovacuum's settings and its last run.
SELECT s.n_live_tup, s.n_dead_tup,
       pg_relation_size(c.oid) AS table_bytes,
       pg_indexes_size(c.oid) AS index_bytes,
       coalesce((SELECT option_value::float8 FROM pg_options_to_table(c.reloptions)
                 WHERE option_name = 'autovacuum_vacuum_threshold'),
                current_setting('autovacuum_vacuum_threshold')::float8) AS vacuum_threshold,
       coalesce((SELECT option_value::float8 FROM pg_options_to_table(c.reloptions)
                 WHERE option_name = 'autovacuum_vacuum_scale_factor'),
                current_setting('autovacuum_vacuum_scale_factor')::float8) AS vacuum_scale_factor,
       greatest(c.reltuples, 0)::float8 AS reltuples,
       greatest(s.last_vacuum, s.last_autovacuum) AS last_vacuum
FROM pg_class c
JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = to_regclass(quote_ident(current_schema()) || '.jobs');

-- name: tune_autovacuum
-- Per-table autovacuum settings for the jobs table (ALTER TABLE takes no parameters: the values are composed as literals).
ALTER TABLE jobs SET (autovacuum_enabled = {enabled},
                      autovacuum_vacuum_threshold = {threshold},
                      autovacuum_vacuum_scale_factor = {scale_factor});
