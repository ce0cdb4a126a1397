-- The database clock, shared by every part (applied first by db.reset_schema()).
-- reset_schema() runs each schema file with search_path set to the chapter's own schema,
-- so nothing here is schema-qualified.

-- The clock every lease, backoff and timestamp uses. It is the database's clock
-- (clock_timestamp(), which advances even within a statement) unless the session has set
-- `cachequeue.now`, which lets a notebook or a test step time by hand:
--     SET cachequeue.now = '2026-01-01 00:00:30+00';
-- That setting is a teaching hook: any client may change it for its own session. A
-- production queue would call clock_timestamp() (or now()) directly.
-- STABLE lets the planner use cq_now() in index conditions. It does not make one statement
-- see one instant: clock_timestamp() moves on, so each queue statement reads cq_now() once
-- in a materialised `clock` CTE and uses that reading everywhere.
CREATE FUNCTION cq_now() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        nullif(current_setting('cachequeue.now', true), '')::timestamptz,
        clock_timestamp()
    )
$$;
