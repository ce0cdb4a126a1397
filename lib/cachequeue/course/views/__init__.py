"""Queue state and measurements as pandas DataFrames and matplotlib figures, labelled in Chinese.

- `backfill`: Chapter 02's delete-after-write race as its cells step it: a log and its picture.
- `coalescing`: Concurrent readers of one cold key and the one load they share, recorded and drawn.
- `fonts`: Chinese text in matplotlib figures, on any laptop, without installing a font.
- `frames`: Queue state as pandas DataFrames: jobs, attempts, and simulated retry schedules.
- `eventlanes`: Lanes on one time axis (spans and marks from a run's recorded events), one colour per kind.
- `perfplots`: Figures of chapter 10 (performance and scale), drawn from recorded benchmark runs (`perf.load`).
- `plots`: Matplotlib figures for the notebooks, labelled in Chinese. Each function returns its Figure.
- `scrapes`: Prometheus scrapes as DataFrames, and what Prometheus computes from two of them.
- `servicestory`: One request's life through the HTTP service on one time axis (chapter 07).
- `timeline`: Who ran what, when: attempts per worker as a table and as a Gantt-style figure.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["backfill", "coalescing", "eventlanes", "fonts", "frames", "perfplots", "plots", "scrapes", "servicestory", "timeline"]
