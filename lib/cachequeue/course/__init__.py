"""The course's teaching apparatus: everything a notebook needs that production code would not.

- the sample application of the chapter, a "team documents assistant": `access` (users,
  documents, permission views), `documents` (an in-memory store with versions), `summariser`
  (a slow, deterministic "model"), `reading` (summaries read through a cache, in the
  chapter's right and wrong variants), `data` (the sample CSVs, shipped as package data);
- real worker processes: `handlers` (the `effect` handler: a vendor call, a charge booked
  once per business key, a "started" report), `fleet` (start, watch, kill, stop workers);
- the sample app on the HTTP service: `webapp` (tokens, documents router, the page in
  `web/`, `create_app` for `cachequeue serve`), `summaries` (summary jobs: business key,
  handlers), `stack` (the service and its workers as real processes);
- probes of what goes wrong: `naive` (read-then-update claims, SKIP LOCKED in a report),
  `timers` (in-process timers die with their process), `ttldict` (a TTL-only map),
  `workload` (gated loaders, read traces), `plans` (bulk rows, EXPLAIN, scans);
- models and views: `lab` (the queue as an in-memory state machine on a manual clock),
  `lockstep` (one operation sequence replayed on the model and on PostgreSQL), `frames`
  (queue state as pandas DataFrames), `plots` (the notebooks' figures).

This part may import every other part; nothing outside it imports it. Its modules are not
imported here, so `import cachequeue.course.lab` does not load pandas or matplotlib.
"""

__all__ = [
    "access",
    "data",
    "documents",
    "fleet",
    "frames",
    "handlers",
    "lab",
    "lockstep",
    "naive",
    "plans",
    "plots",
    "reading",
    "stack",
    "summaries",
    "summariser",
    "timers",
    "ttldict",
    "webapp",
    "workload",
]
