-- Statements of cachequeue.queue.notify.

-- name: channel
-- The channel on which this schema's jobs table sends its notifications.
SELECT job_channel(current_schema());

-- name: watch
-- Ask for every progress notification of this tenant's job from now on; true if the job exists.
-- The UPDATE takes the job's row lock, so it waits for a change in flight (whose
-- notification it may have missed) to commit before the watcher reads the job. A job
-- already watched is not updated again (no lock, no new row version).
WITH marked AS (
    UPDATE jobs
    SET watched = true
    WHERE id = %(job_id)s AND tenant_id = %(tenant_id)s AND NOT watched
    RETURNING id
)
SELECT EXISTS (SELECT 1 FROM marked)
       OR EXISTS (SELECT 1 FROM jobs WHERE id = %(job_id)s AND tenant_id = %(tenant_id)s);
