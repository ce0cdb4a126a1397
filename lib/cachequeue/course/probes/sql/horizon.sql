-- Probes of what an open transaction holds (cachequeue.course.probes.horizon), for chapter 03.

-- name: activity
-- One backend as pg_stat_activity shows it: state, and whether it holds a transaction id / a snapshot.
SELECT state,
       backend_xid IS NOT NULL AS holds_xid,
       backend_xmin IS NOT NULL AS holds_snapshot
FROM pg_stat_activity
WHERE pid = %(pid)s;

-- name: try_lock_job
-- Lock one job row at once or fail (NOWAIT); on an autocommit connection the lock ends with the statement.
SELECT id FROM jobs WHERE id = %(job_id)s FOR UPDATE NOWAIT;

-- name: vacuum_jobs
-- Vacuum the jobs table and report, as INFO notices, what it removed and what it had to keep.
VACUUM (VERBOSE) jobs;
