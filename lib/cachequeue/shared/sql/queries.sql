-- Statements of cachequeue.shared.fencing (the table is in fencing.sql, made by install()).

-- name: fenced_write
-- Write a resource unless a larger fencing token has written it; a row comes back only if written.
-- ON CONFLICT ... DO UPDATE locks the existing row and tests WHERE against its latest
-- committed version, so two writers with different tokens cannot both pass the check.
-- An equal token is the same holder writing again, and is accepted.
INSERT INTO fenced_resources AS r (resource, fence, value)
VALUES (%(resource)s, %(fence)s, %(value)s)
ON CONFLICT (resource) DO UPDATE
    SET fence = excluded.fence, value = excluded.value, written_at = cq_now()
    WHERE r.fence <= excluded.fence
RETURNING fence;

-- name: fenced_read
-- The value of a resource and the fencing token that wrote it.
SELECT fence, value FROM fenced_resources WHERE resource = %(resource)s;
