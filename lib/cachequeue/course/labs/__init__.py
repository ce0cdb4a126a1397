"""Whole exercises built from the other rooms: the simulated ops day, the performance runs, the capstone's probes.

- `capstone`: Probes for chapter 12's capstone: run a learner's function in fixed scenarios, report what it did.
- `leaselab`: The lease lab of chapter 06: a learner's claim and finish, judged by the history checker.
- `minute`: A minute of work whose every figure is known before it runs, and a tenant that bursts.
- `opsday`: A day of the queue on a manual clock: a noisy tenant, quiet tenants, a fixed pool of slots.
- `perf`: Performance and scale (chapter 11, bench/worker_throughput.py): what the queue costs, measured.

The exercise graders are in `course.graders`, one module per chapter.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["capstone", "leaselab", "minute", "opsday", "perf"]
