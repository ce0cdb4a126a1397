-- The database clock, shared by every part (applied first by db.reset_schema()).
-- reset_schema() runs each schema file with search_path set to the chapter's own schema,
-- so nothing here is schema-qualified.

-- The clock every lease, backoff and timestamp uses. It is the database's clock
-- (clock_timestamp(), which advances even within a statement) unless the session has set
-- `cachequeue.now`, which lets a notebook or a test step time by hand:
--     SET cachequeue.now = '2026-01-01 00:00:30+00';
-- That setting is a teaching hook: any client may change it for its own session. A
-- production queue would call clock_timestamp() (or now()) directly.
-- Declared STABLE, and that is a deliberate mislabel. STABLE promises the same result for
-- the same arguments within one statement; clock_timestamp() moves on even within one
-- statement, so unless the session froze the clock cq_now() breaks that promise (honestly
-- labelled it would be VOLATILE). What the label buys: the planner puts only STABLE or
-- IMMUTABLE expressions into index conditions, so `run_after <= cq_now()` can be an index
-- condition instead of a row-by-row filter (chapter 00 shows both plans). What nothing may
-- rely on: one statement seeing one instant. So every queue statement that moves a job
-- reads cq_now() once, in a materialised `clock` CTE, and uses that reading everywhere.
CREATE FUNCTION cq_now() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        nullif(current_setting('cachequeue.now', true), '')::timestamptz,
        clock_timestamp()
    )
$$;
