-- Statements of cachequeue.course.labs.perf (chapter 11 and bench/worker_throughput.py): where the
-- queue's time goes, and what the server can commit.

-- name: waiting_on
-- Which of these application names have a backend waiting for a lock (the benchmark's start gate).
SELECT DISTINCT application_name FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND application_name = ANY(%(names)s);

-- name: backends_named
-- How many backends carry this application name (0 once a stopped worker's connections are gone).
SELECT count(*) FROM pg_stat_activity WHERE application_name = %(name)s;

-- name: transactions
-- Transactions this database has run so far (committed and rolled back), from the statistics.
SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database();

-- name: clear_snapshot
-- Forget this session's cached statistics, so the next read sees fresh counts.
SELECT pg_stat_clear_snapshot();

-- name: commits_table
-- A one-column table for counting commits.
CREATE TABLE IF NOT EXISTS perf_commits (n int NOT NULL);

-- name: synchronous_commit
-- Whether this session's commits wait for the WAL to reach the disk (on) or not (off).
SELECT set_config('synchronous_commit', %(value)s, false);

-- name: commit_one
-- One small durable write: in autocommit mode, one statement is one commit.
INSERT INTO perf_commits (n) VALUES (%(n)s);

-- name: server_facts
-- The server facts a recorded benchmark carries.
SELECT current_setting('server_version') AS server_version,
       current_setting('fsync') AS fsync,
       current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('wal_sync_method') AS wal_sync_method,
       current_setting('shared_buffers') AS shared_buffers;

-- name: wal_fsyncs_io
-- WAL fsyncs since the statistics were last reset (PostgreSQL 18 and later: pg_stat_io, object wal).
SELECT coalesce(sum(fsyncs), 0)::bigint FROM pg_stat_io WHERE object = 'wal';

-- name: wal_fsyncs_wal
-- WAL fsyncs since the statistics were last reset (PostgreSQL 14 to 17: pg_stat_wal.wal_sync).
SELECT wal_sync FROM pg_stat_wal;

-- name: server_version_num
-- The server's version as a number (180001 for 18.1).
SELECT current_setting('server_version_num')::integer;

-- name: last_job_id
-- The highest job id so far (0 for an empty table): the jobs of a run are the ones above it.
SELECT coalesce(max(id), 0) FROM jobs;

-- name: mode_statements
-- The claim and completion statements that moved the jobs above an id, read from the rows they wrote: each statement reads the database clock once, so its rows share one time.
SELECT (SELECT count(DISTINCT started_at) FROM job_attempts WHERE job_id > %(after)s) AS claims,
       (SELECT count(DISTINCT created_at) FROM job_results WHERE job_id > %(after)s) AS completions,
       (SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM job_attempts
                                         WHERE job_id > %(after)s GROUP BY started_at) c) AS largest_claim,
       (SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM job_results
                                         WHERE job_id > %(after)s GROUP BY created_at) r) AS largest_completion,
       (SELECT count(*) FROM jobs WHERE id > %(after)s AND state = 'done') AS done,
       (SELECT count(*) FROM job_attempts WHERE job_id > %(after)s) AS attempts;

-- name: unsettled_jobs
-- Jobs pending or running: a throughput_mode run refuses to start while there are any (their claims would mix with its own).
SELECT count(*) FROM jobs WHERE state IN ('pending', 'running');

-- name: prepared_here
-- Whether this session still holds generic_plan()'s prepared statement (a call that failed midway).
SELECT count(*) > 0 FROM pg_prepared_statements WHERE name = 'generic_finish_many';

-- name: prepared_plans
-- How often generic_plan()'s prepared statement was planned for its values and how often it ran with the generic plan (PostgreSQL 14+).
SELECT custom_plans, generic_plans FROM pg_prepared_statements WHERE name = 'generic_finish_many';

-- name: expire_lease
-- Let one running job's lease run out now (a holder that went silent), so another claim can take it over.
UPDATE jobs SET locked_until = cq_now() - interval '1 second' WHERE id = %(job_id)s AND state = 'running';

-- name: jobs_after
-- The jobs above an id: state, attempts and hand-backs, in id order.
SELECT id, state::text, attempts, handbacks FROM jobs WHERE id > %(after)s ORDER BY id;
