-- Statements of bench/broker_throughput.py (the JetStream side's start gate and end check;
-- the timed work is the workers' own).

-- name: gate
-- Hold every worker's first fenced write until all of them wait (the start gate).
LOCK TABLE broker_deliveries IN ACCESS EXCLUSIVE MODE;

-- name: check
-- Results recorded so far, and when the last one was recorded.
SELECT count(*), max(finished_at) FROM broker_results;
