"""The course's teaching apparatus: everything a notebook needs that production code would not.

`chapter` composes a chapter's schema from the parts' installs. The other modules live in
seven rooms, by kind (each room's `__init__` lists its modules):

    app/      the sample application, a "team documents assistant": users and permission
              views, documents with versions, the slow "model", the read path through a
              cache, summary and effect jobs, the HTTP app and its page (`web/`)
    procs/    real processes a chapter starts, watches, pauses and kills: worker fleets, the
              service stack, timers, shared-cache readers, the outbox relay, chaos runs
    probes/   counter-examples and measurements of what goes wrong: naive claims, what an
              open transaction holds, statements on a connection, plans, a TTL-only map,
              read workloads, Redis probes
    model/    the queue as an in-memory state machine (`queue_model`), replayed in lockstep
              with PostgreSQL, and its deliberately wrong mutants
    views/    DataFrames, timelines and figures (with the Chinese font they need)
    labs/     whole exercises built from the rest: the simulated ops day, the performance
              chapter's runs, the capstone's probes
    graders/  the exercises' checks, one module per chapter: each takes the learner's code
    data/     the sample CSVs and the recorded benchmark runs (package data, no code)

`CHAPTERS` says which chapters' notebooks import each module (`tests/unit/test_layout.py`
checks it against the notebooks); a module with no chapter serves other modules, tests or
`bench/` only.

This part may import every other part; nothing outside it imports it. Its modules are not
imported here, so `import cachequeue.course.model.queue_model` does not load pandas or
matplotlib.
"""

__all__ = ["CHAPTERS", "ROOMS"]

ROOMS = ("app", "procs", "probes", "model", "views", "labs", "graders")

# module (room.name) -> the chapters whose notebooks import it
CHAPTERS: dict[str, tuple[str, ...]] = {
    "chapter": ("00", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14"),
    "app.access": ("02",),
    "app.data": ("00", "02", "08", "09", "13"),
    "app.documents": ("02", "12"),
    "app.editing": ("09",),
    "app.effects": ("06",),
    "app.pipeline": ("09",),
    "app.reading": ("02",),
    "app.summaries": ("07", "12"),
    "app.summariser": ("00", "01", "02", "03", "10", "12"),
    "app.tenancy": ("02",),
    "app.webapp": ("07", "08", "12"),
    "procs.brokerchaos": ("13",),
    "procs.browser": ("07",),
    "procs.cancelling": ("09",),
    "procs.capacity": ("08",),
    "procs.chaos": ("06",),
    "procs.fleet": ("06", "13"),
    "procs.holder": ("06",),
    "procs.horizonload": ("14",),
    "procs.jetlab": ("13",),
    "procs.overload": ("07",),
    "procs.ratelab": ("08",),
    "procs.relaylab": ("09",),
    "procs.schedulers": (),
    "procs.sharedreaders": ("10",),
    "procs.stack": ("07", "08", "12"),
    "procs.streamlab": ("13",),
    "procs.timers": ("03", "12"),
    "procs.wakeup": ("06",),
    "probes.horizon": ("03", "08", "14"),
    "probes.minimal": ("03",),
    "probes.naive": ("03", "12"),
    "probes.plans": ("03", "08", "11"),
    "probes.redislab": ("10",),
    "probes.rotation": ("14",),
    "probes.statements": ("03", "06", "08"),
    "probes.tablelocks": ("08",),
    "probes.ttldict": ("01",),
    "probes.workload": ("01", "10"),
    "model.lockstep": ("05",),
    "model.mutants": ("05",),
    "model.queue_model": ("05",),
    "views.attempts": ("12",),
    "views.backfill": ("02",),
    "views.backoff": ("04",),
    "views.chaoslanes": ("06",),
    "views.bloat": ("14",),
    "views.claimflow": ("03",),
    "views.claimrace": ("03",),
    "views.clockreads": ("00",),
    "views.coalescing": ("01",),
    "views.eventlanes": (),
    "views.fonts": (),
    "views.frames": ("00", "03", "04", "05", "07", "12"),
    "views.interactive": ("06", "13"),
    "views.fencing": ("10",),
    "views.fleetlanes": ("06",),
    "views.leases": ("03", "05"),
    "views.modelcalls": ("00",),
    "views.recovery": ("09",),
    "views.perfplots": ("11", "13"),
    "views.plots": ("01", "04"),
    "views.redelivery": ("13",),
    "views.scrapes": ("08",),
    "views.servicestory": ("07",),
    "views.sharedload": ("12",),
    "views.states": ("03", "04", "05"),
    "views.timeline": ("06",),
    "labs.capstone": ("12",),
    "labs.leaselab": ("06",),
    "labs.minute": ("08",),
    "labs.opsday": ("08", "09"),
    "labs.perf": ("11", "13"),
    "graders.ch00": ("00",),
    "graders.ch01": ("01",),
    "graders.ch02": ("02",),
    "graders.ch03": ("03",),
    "graders.ch04": ("04",),
    "graders.ch05": ("05",),
    "graders.ch06": ("06",),
    "graders.ch07": ("07",),
    "graders.ch08": ("08",),
    "graders.ch09": ("09",),
    "graders.ch10": ("10",),
    "graders.ch11": ("11",),
    "graders.ch12": ("12",),
    "graders.ch13": ("13",),
    "graders.ch14": ("14",),
}
