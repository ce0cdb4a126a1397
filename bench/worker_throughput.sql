-- Statements of bench/worker_throughput.py (its set-up; the timed work is the workers' own).

-- name: watch_all
-- Mark every job watched, as if an event stream followed each: their claims and finishes notify.
UPDATE jobs SET watched = true WHERE NOT watched;
