"""Queue state and measurements as pandas DataFrames and matplotlib figures, labelled in Chinese.

- `fonts`: Chinese text in matplotlib figures, on any laptop, without installing a font.
- `frames`: Queue state as pandas DataFrames: jobs, attempts, and simulated retry schedules.
- `perfplots`: Figures of chapter 11 (performance and scale), drawn from recorded benchmark runs (`perf.load`).
- `plots`: Matplotlib figures for the notebooks, labelled in Chinese. Each function returns its Figure.
- `scrapes`: Prometheus scrapes as DataFrames, and what Prometheus computes from two of them.
- `timeline`: Who ran what, when: attempts per worker as a table and as a Gantt-style figure.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["fonts", "frames", "perfplots", "plots", "scrapes", "timeline"]
