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
  `horizon` (what an open transaction holds: xid, snapshot, row lock, dead rows),
  `timers` (in-process timers die with their process), `ttldict` (a TTL-only map),
  `workload` (gated loaders, read traces), `plans` (bulk rows, EXPLAIN, scans),
  `tenancy` (two tenants with the same document id),
  `redislab` (a Redis key's real expiry, a write without fencing, hit costs, a lock that
  changes hands between two commands), `statements` (the statements a function sends on a
  connection, and a second call run in the gap between two of them),
  `sharedreaders` (reader processes that miss one key of the shared cache at once);
- models and views: `lab` (the queue as an in-memory state machine on a manual clock),
  `lockstep` (one operation sequence replayed on the model and on PostgreSQL), `frames`
  (queue state as pandas DataFrames), `plots` (the notebooks' figures; `fonts` registers the Chinese font they use), `mutants` (models
  wrong on one boundary, which the lockstep comparison must catch);
- measurements (chapter 10): `perf` (recorded benchmark runs, commit timing, drains, claim
  cost, the worker benchmark's probes), `perfplots` (the chapter's figures);
- exercises: `capstone` (chapter 11: probes that run a learner's step in fixed scenarios
  and report what it did, for the check cells to assert on).

This part may import every other part; nothing outside it imports it. Its modules are not
imported here, so `import cachequeue.course.lab` does not load pandas or matplotlib.
"""

__all__ = [
    "access",
    "capstone",
    "data",
    "documents",
    "fonts",
    "fleet",
    "frames",
    "handlers",
    "horizon",
    "lab",
    "lockstep",
    "mutants",
    "naive",
    "perf",
    "perfplots",
    "plans",
    "plots",
    "reading",
    "redislab",
    "sharedreaders",
    "stack",
    "statements",
    "summaries",
    "summariser",
    "tenancy",
    "timers",
    "ttldict",
    "webapp",
    "workload",
]
