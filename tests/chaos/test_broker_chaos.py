"""A small seeded chaos run of the JetStream worker in every `make test`: a couple of hundred
jobs, 4 `cachequeue worker --broker nats` processes, 3 SIGKILLs with respawn, 2 SIGSTOP/SIGCONTs
past the lease, one SIGKILL and restart of the private broker. Nothing may be lost, nothing
may get two results, and every result must come from its message's newest delivery.
`python bench/chaos.py --broker nats` runs the full-size one.

A failure names the seed; CHAOS_SEED=<n> reruns exactly that plan.
"""

import json
import os

import pytest

from cachequeue.course.procs import brokerchaos

pytestmark = [pytest.mark.db, pytest.mark.nats]  # private throw-away servers of its own

SEED = int(os.environ.get("CHAOS_SEED", "2026"))


def test_nothing_is_lost_or_doubled_under_kills_pauses_and_a_broker_restart():
    result = brokerchaos.run(jobs=200, workers=4, seed=SEED, kills=3, stops=2, restarts=1,
                             time_limit=150)
    problems = brokerchaos.failures(result)
    assert problems == [], "\n".join(problems) + "\n" + json.dumps(result, indent=1)
    verdict = result["verdict"]
    assert verdict["results"] == verdict["jobs_with_result"] == 200
    # At least once: interrupted jobs ran again, and each kept a single result.
    assert result["logged"]["started"] > 200
    assert result["logged"]["reconnected"] >= 1  # the broker restart was lived through
    assert result["worker_processes"] == 4 + 3, "each killed worker was replaced"
    # Each pause froze a worker inside a long job past its lease: its late result was refused.
    assert result["paused_in_a_job"] == 2 and result["stale_results_refused"] >= 1, result
    assert brokerchaos.counts(result) == {
        "submitted": 200, "processed": 200, "lost": 0, "doubled": 0,
        "stale_refused": result["stale_results_refused"], "kills": 3, "pauses": 2, "restarts": 1}
