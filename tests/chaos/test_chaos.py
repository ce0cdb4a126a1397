"""A small seeded chaos run in every `make test`: a few hundred jobs, 4 worker processes,
3 SIGKILLs with respawn, 3 SIGSTOP/SIGCONTs past the lease, one crash-restart of a private
server; with the completion batch on, one more SIGKILL lands between a handler's return and
the flush of its result. Nothing may be lost or duplicated, batching on or off. `make
chaos` runs the full-size one (bench/).

A failure names the seed; CHAOS_SEED=<n> reruns exactly that plan.
"""

import json
import os

import pytest

from cachequeue.course.procs import chaos

pytestmark = pytest.mark.db  # a private throw-away server, not DATABASE_URL, but a server

SEED = int(os.environ.get("CHAOS_SEED", "2026"))


@pytest.mark.parametrize("batch", [100, 1], ids=["batching", "no-batching"])
def test_nothing_is_lost_or_duplicated_under_kills_pauses_and_a_restart(batch):
    flush_kills = 1 if batch > 1 else 0
    result = chaos.run(jobs=240, workers=4, seed=SEED, kills=3, stops=3, restarts=1,
                       time_limit=120, batch=batch, flush_kills=flush_kills)
    problems = chaos.failures(result)
    assert problems == [], "\n".join(problems) + "\n" + json.dumps(result, indent=1)
    verdict = result["verdict"]
    assert verdict["done"] == verdict["jobs"] == 240
    # At least once: jobs that were interrupted ran again, and their charge stayed single.
    assert verdict["handler_runs"] > 240 and verdict["expired_attempts"] > 0
    assert result["carried_out"] == {"kills": 3, "stops": 3, "restarts": 1} | (
        {"flush_kills": 1} if flush_kills else {})
    assert result["flush_kills_landed"] == flush_kills, "the kill found the result unflushed"
    assert result["worker_processes"] == 4 + 3 + flush_kills, "each killed worker was replaced"
