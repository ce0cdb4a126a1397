-- Statements of cachequeue.queue.kinds (the rows of job_kinds: the kinds a queue accepts).

-- name: register
-- Register the given kinds unless they are there (a registered kind keeps its description); how many are new.
WITH added AS (
    INSERT INTO job_kinds (kind, description)
    SELECT * FROM unnest(%(kinds)s::text[], %(descriptions)s::text[])
    ON CONFLICT (kind) DO NOTHING
    RETURNING kind
)
SELECT count(*)::integer FROM added;

-- name: registered
-- Every registered kind and its description, by name.
SELECT kind, description FROM job_kinds ORDER BY kind;
