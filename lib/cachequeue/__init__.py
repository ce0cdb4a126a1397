"""cachequeue: the shared library of the course on caching, job queues and background work.

Its parts, and the one rule between them (tests/unit/test_layout.py enforces it):

    cachequeue/            the ground floor: errors, clock, checks, db, embedded,
                           embedded_redis (with localserver), servers, sqlfile,
                           lanes + laneshtml (the one drawing vocabulary of the
                           course's timelines and verify's witness)
        cache/             the in-process loading cache and cache keys      (production-shaped)
        queue/             the PostgreSQL job queue and its worker          (production-shaped)
        shared/            Redis: lock with fencing tokens, shared cache    (production-shaped)
        service/           the HTTP service for the queue (FastAPI)         (production-shaped)
        cli/               the `cachequeue` command (worker, serve)         (production-shaped)
        course/            teaching apparatus: sample app, probes, models, DataFrames, plots

The ground floor imports no part (but `__main__`, the entry point, calls `cli`). `cache`
and `queue` import only the ground floor: never each other, never `course`. `shared`
imports the ground floor and `cache`, never `queue` or `course`. `service` and `cli` may
import `queue`, never `course`. `course` may import anything. Every part keeps its SQL in
`sql/*.sql` files beside its modules.
"""

__version__ = "0.1.0"
