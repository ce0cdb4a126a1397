"""Real processes a chapter starts, watches, pauses and kills, and what they leave behind.

- `brokerchaos`: Chaos for the JetStream worker: kills, pauses and a broker restart; what survived (chapter 13).
- `browser`: Headless Chromium as a real process: where it is, how it starts, and why it cannot here.
- `cancelling`: Cancelling a job while a real `queue.Worker` runs it (chapter 09, Q20).
- `capacity`: Two ceilings of concurrency measured on real processes: the connection pool and memory (Q12).
- `chaos`: Chaos: worker processes killed, paused and respawned at random, the server restarted; what survived.
- `fleet`: Real worker processes for the notebooks and the chaos run, watched through their log lines.
- `holder`: What the server sees of a holder that died and of one that was paused: a session lock against a lease.
- `jetlab`: NATS JetStream as a job queue (chapter 13): a work-queue stream, a pull consumer, brokers killed.
- `ratelab`: A vendor's quota across real processes: no limit, a limit in each process, one in the database.
- `relaylab`: The outbox lab: a relay process killed between publishing and marking, and a consumer.
- `schedulers`: Scheduler processes killed, paused, a restart and an outage: each fire time enqueued once (issue 31).
- `sharedreaders`: Reader processes that miss the same key of a SharedCache at once: one load across them.
- `stack`: The HTTP service as a real child process, beside worker processes: for notebooks, tests, benchmarks.
- `streamlab`: Redis Streams as a job queue (chapter 13): a consumer group, its pending list, and a broker killed.
- `timers`: In-process timers die with their process; a persisted job does not (a real subprocess).
- `wakeup`: How an idle worker learns of new work: LISTEN/NOTIFY against polling, measured on real processes.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["brokerchaos", "browser", "cancelling", "capacity", "chaos", "fleet", "holder", "jetlab", "ratelab",
           "relaylab", "schedulers", "sharedreaders", "stack", "streamlab", "timers", "wakeup"]
