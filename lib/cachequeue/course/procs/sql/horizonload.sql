-- Chapter 14's held-horizon experiment (cachequeue.course.procs.horizonload).

-- name: report
-- An analytics report's first statement: in REPEATABLE READ, it takes the transaction's snapshot.
SELECT state, count(*) FROM jobs GROUP BY state;

-- name: write
-- A transaction's first write assigns it a transaction id; pg_current_xact_id() assigns one the same way.
SELECT pg_current_xact_id();

-- name: long_query
-- A long statement: its snapshot lives until it ends (cancelled by the holder's close()).
SELECT count(*) FROM jobs, pg_sleep(600);

-- name: snapshot_of
-- Whether backend %(pid)s runs a statement with a snapshot now.
SELECT state = 'active' AND backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = %(pid)s;

-- name: holds
-- Whether backend %(pid)s still exists, and whether it holds a snapshot or a transaction id.
SELECT count(*) > 0, coalesce(bool_or(coalesce(backend_xmin, backend_xid) IS NOT NULL), false)
FROM pg_stat_activity WHERE pid = %(pid)s;

-- name: sizes
-- The jobs table's heap and its indexes, in bytes.
SELECT pg_relation_size('jobs'), pg_indexes_size('jobs');

-- name: autovacuum_off
-- Autovacuum off for the jobs table: only the experiment's own VACUUMs touch it.
ALTER TABLE jobs SET (autovacuum_enabled = false);
