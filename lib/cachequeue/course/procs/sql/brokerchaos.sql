-- Statements of course.procs.brokerchaos: what survived a chaos run of the JetStream worker.

-- name: done_count
-- Jobs with a result so far.
SELECT count(*) FROM broker_results;

-- name: verdict
-- Results, the jobs they belong to (the payload's n), results beyond one per job, dead letters.
SELECT count(*) AS results,
       count(DISTINCT (result ->> 'n')) AS jobs_with_result,
       count(*) - count(DISTINCT (result ->> 'n')) AS duplicates,
       (SELECT count(*) FROM broker_dead_letters) AS dead_letters,
       (SELECT count(*) FROM broker_results r JOIN broker_deliveries d USING (stream, stream_seq)
        WHERE r.delivery <> d.delivery) AS results_not_from_the_newest_delivery
FROM broker_results;
