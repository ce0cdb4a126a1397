-- A write that chapter 10 runs on purpose to show why a lock alone does not protect a
-- resource. The real, fenced write is cachequeue.shared's fenced_write (shared/sql/queries.sql).

-- name: unfenced_write
-- Last writer wins: no fencing token is compared, so a paused lock holder that wakes up late
-- overwrites the value of the holder that came after it.
INSERT INTO fenced_resources AS r (resource, fence, value)
VALUES (%(resource)s, %(fence)s, %(value)s)
ON CONFLICT (resource) DO UPDATE
    SET fence = excluded.fence, value = excluded.value, written_at = cq_now();
