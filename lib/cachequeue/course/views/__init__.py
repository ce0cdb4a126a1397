"""Queue state and measurements as pandas DataFrames and matplotlib figures, labelled in Chinese.

- `attempts`: One job's attempts from its attempt rows: who ran it when, the side effect each run made, the refused report.
- `backfill`: Chapter 02's delete-after-write race as its cells step it: a log and its picture.
- `backoff`: One job's attempts on a time axis, each retry inside the jitter window it was drawn from.
- `bloat`: Chapter 14's figures: the jobs table under a held horizon, and its size under churn.
- `chaoslanes`: Chapter 06's chaos run as lanes: every attempt, every refused late report, every fault.
- `claimflow`: The parts of a statement written as CTEs (`WITH a AS (...), b AS (...) ...`) and which part reads which, drawn as a data-flow graph.
- `claimrace`: The claim race as two lanes (workers a and b): which statement each sent, in which order, and what it got.
- `clockreads`: cq_now() read many times inside one statement, by a frozen session and a live one (chapter 00).
- `coalescing`: Concurrent readers of one cold key and the one load they share, recorded and drawn.
- `eventlanes`: Lanes on one time axis (spans and marks from a run's recorded events), one colour per kind: the room's name for `cachequeue.lanes`, the course's one drawing vocabulary.
- `fencing`: Kleppmann's timeline as it ran: two lock holders, the pause, the tokens, the refused write.
- `fonts`: Chinese text in matplotlib figures, on any laptop, without installing a font.
- `interactive`: A lane chart as an interactive view in a notebook (offline HTML: zoom, pan, hover), beside its static image.
- `frames`: Queue state as pandas DataFrames: jobs, attempts, and simulated retry schedules.
- `leases`: A lease timeline: per worker, the lease it held as a bar, renewals, the takeover, refused reports.
- `modelcalls`: The simulated model's calls on the manual clock: how long each took and which one failed (chapter 00).
- `perfplots`: Figures of chapter 11 (performance and scale), drawn from recorded benchmark runs (`perf.load`).
- `plots`: Matplotlib figures for the notebooks, labelled in Chinese. Each function returns its Figure.
- `recovery`: Chapter 09's pictures from its own run: the outbox relay killed between publish and mark, and dead letters retried in bulk.
- `redelivery`: A broker's redelivery as it ran: the stuck consumer, the takeover, the stale ack; chapter 13's chaos run as lanes.
- `scrapes`: Prometheus scrapes as DataFrames, and what Prometheus computes from two of them.
- `servicestory`: One request's life through the HTTP service on one time axis (chapter 07).
- `sharedload`: Readers who share one load: each reader's wait as a bar, the one load beneath them with its steps.
- `states`: The job's states and the operations that move a job between them, as a table and a diagram.
- `timeline`: Who ran what, when: attempts per worker as a table and as a Gantt-style figure.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["attempts", "backfill", "backoff", "bloat", "chaoslanes", "claimflow", "claimrace", "clockreads", "coalescing", "eventlanes",
           "fencing", "fonts", "frames", "interactive", "leases", "modelcalls", "perfplots", "plots", "recovery",
           "redelivery", "scrapes", "servicestory", "sharedload", "states", "timeline"]
