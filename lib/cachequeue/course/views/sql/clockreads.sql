-- Many readings of cq_now() inside one statement (cachequeue.course.views.clockreads).

-- name: readings
-- cq_now() read once per row of one statement, with the row's number, in seconds since the epoch.
SELECT g AS n, extract(epoch FROM cq_now()) AS at
FROM generate_series(1, %(reads)s::integer) AS g;
