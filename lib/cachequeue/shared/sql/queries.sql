-- Statements of cachequeue.shared.fencing (the table is in fencing.sql, made by install()).

-- name: fenced_write
-- Write a resource unless a larger fencing token has written it; a row comes back only if written.
-- ON CONFLICT ... DO UPDATE locks the existing row and tests WHERE against its latest
-- committed version, so a smaller token never overwrites a larger one, however the writers
-- interleave. Two writers can both pass, in token order (the smaller one first): the check
-- orders writes, it does not make one holder exclusive. An equal token is the same holder
-- writing again (fencing.Counter never gives one token to two grants), and is accepted.
INSERT INTO fenced_resources AS r (resource, fence, value)
VALUES (%(resource)s, %(fence)s, %(value)s)
ON CONFLICT (resource) DO UPDATE
    SET fence = excluded.fence, value = excluded.value, written_at = cq_now()
    WHERE r.fence <= excluded.fence
RETURNING fence;

-- name: fenced_read
-- The value of a resource and the fencing token that wrote it.
SELECT fence, value FROM fenced_resources WHERE resource = %(resource)s;

-- name: durable_commit
-- The token's increment must reach the disk before the token is used (a session may have
-- turned synchronous_commit off); LOCAL: for this transaction only.
SET LOCAL synchronous_commit TO on;

-- name: next_fence
-- The next fencing token of lock `name` (1 for the first), counted in its own row.
INSERT INTO fence_counters AS c (name, last)
VALUES (%(name)s, 1)
ON CONFLICT (name) DO UPDATE SET last = c.last + 1
RETURNING last;
