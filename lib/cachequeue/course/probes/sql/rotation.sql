-- A finished-jobs history kept two ways, for chapter 14 (cachequeue.course.probes.rotation):
-- one plain table emptied row by row, one partitioned by day whose old partitions are dropped.

-- name: create
-- The two history tables: the same columns, one plain, one partitioned by finish time.
CREATE TABLE history_plain (
    job_id      bigint NOT NULL,
    finished_at timestamptz NOT NULL,
    output      jsonb NOT NULL
);
CREATE TABLE history_parted (
    job_id      bigint NOT NULL,
    finished_at timestamptz NOT NULL,
    output      jsonb NOT NULL
) PARTITION BY RANGE (finished_at);

-- name: fill
-- %(per_day)s rows for each of %(days)s days from %(start)s, into both tables.
WITH rows AS (
    SELECT n AS job_id,
           %(start)s::timestamptz + ((n - 1) / %(per_day)s) * interval '1 day'
               + ((n - 1) %% %(per_day)s) * interval '1 second' AS finished_at,
           jsonb_build_object('summary', repeat('x', 100)) AS output
    FROM generate_series(1, %(days)s * %(per_day)s) AS n
), plain AS (
    INSERT INTO history_plain SELECT * FROM rows
)
INSERT INTO history_parted SELECT * FROM rows;

-- name: delete_before
-- Retention row by row: delete the plain table's rows older than %(before)s.
DELETE FROM history_plain WHERE finished_at < %(before)s;

-- name: vacuum_plain
-- Vacuum the plain table (VERBOSE: what it removed).
VACUUM (VERBOSE) history_plain;

-- name: sizes
-- Bytes of the plain table and of every partition of the partitioned one, together.
SELECT pg_relation_size('history_plain'),
       (SELECT coalesce(sum(pg_relation_size(relid)), 0)
        FROM pg_partition_tree('history_parted') WHERE isleaf)::bigint,
       (SELECT count(*) FROM pg_partition_tree('history_parted') WHERE isleaf)::int;

-- name: counts
-- Rows left in each table.
SELECT (SELECT count(*) FROM history_plain), (SELECT count(*) FROM history_parted);

-- name: partitions
-- The partitions of the partitioned history, by name.
SELECT relid::regclass::text
FROM pg_partition_tree('history_parted')
WHERE isleaf
ORDER BY 1;
