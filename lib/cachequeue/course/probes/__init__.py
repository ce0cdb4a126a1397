"""Counter-examples and measurements: each module shows one thing that goes wrong, or what something costs.

- `horizon`: What an open transaction holds while nothing runs in it: a row lock, a transaction id, maybe a snapshot.
- `minimal`: The minimal one-statement claim: `UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)`.
- `naive`: The naive read-then-update claim, in two steps a notebook can interleave by hand.
- `plans`: The claim's cost made visible: bulk rows, EXPLAIN, and the scans a plan uses.
- `redislab`: Chapter 10's probes around Redis: waiting out an expiry, a write without fencing, hit costs.
- `rotation`: A finished-jobs history kept two ways: a plain table emptied row by row, and one partitioned
- `statements`: Watch the statements a function sends on one psycopg connection, and open the gap
- `tablelocks`: Locks on the jobs table and what they stop: a migration, an index build, a row lock.
- `ttldict`: The cache the chapter warns about: a dict with TTLs checked only on read, nothing else.
- `workload`: Deterministic read workloads for the cache chapter: gated loaders and seeded read traces.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["horizon", "minimal", "naive", "plans", "redislab", "rotation", "statements", "tablelocks", "ttldict", "workload"]
