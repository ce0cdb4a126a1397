-- A process that holds a job by a lease and by a session advisory lock (cachequeue.course.procs.holder).
-- The lock's key is (hash of the schema, job id): chapters in other schemas never collide.

-- name: take_lock
-- Take the job's session advisory lock (waits while another session holds it); this session's backend pid.
SELECT pg_advisory_lock(hashtext(current_schema()), %(job_id)s::integer), pg_backend_pid() AS backend;

-- name: unlock
-- Release the job's session advisory lock, if this session holds it.
SELECT pg_advisory_unlock(hashtext(current_schema()), %(job_id)s::integer);

-- name: lock_timeout
-- How long a lock wait may last in this transaction, in milliseconds (0: no wait at all).
SELECT set_config('lock_timeout', %(ms)s::text, true);

-- name: backend
-- A backend (server process) of this database: its state, or no row once it has exited.
SELECT state FROM pg_stat_activity WHERE pid = %(pid)s AND datname = current_database();

-- name: lease_left
-- Seconds until the job's lease runs out, on the database clock (negative: it has run out).
SELECT extract(epoch FROM locked_until - cq_now())::float8 FROM jobs WHERE id = %(job_id)s;
