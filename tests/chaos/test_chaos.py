"""A small seeded chaos run in every `make test`: a few hundred jobs, 4 worker processes,
3 SIGKILLs with respawn, 3 SIGSTOP/SIGCONTs past the lease, one crash-restart of a private
server. Nothing may be lost or duplicated. `make chaos` runs the full-size one (bench/).

A failure names the seed; CHAOS_SEED=<n> reruns exactly that plan.
"""

import json
import os

import pytest

from cachequeue.course import chaos

pytestmark = pytest.mark.db  # a private throw-away server, not DATABASE_URL, but a server

SEED = int(os.environ.get("CHAOS_SEED", "2026"))


def test_nothing_is_lost_or_duplicated_under_kills_pauses_and_a_restart():
    result = chaos.run(jobs=240, workers=4, seed=SEED, kills=3, stops=3, restarts=1,
                       time_limit=120)
    problems = chaos.failures(result)
    assert problems == [], "\n".join(problems) + "\n" + json.dumps(result, indent=1)
    verdict = result["verdict"]
    assert verdict["done"] == verdict["jobs"] == 240
    # At least once: jobs that were interrupted ran again, and their charge stayed single.
    assert verdict["handler_runs"] > 240 and verdict["expired_attempts"] > 0
    assert result["carried_out"] == {"kills": 3, "stops": 3, "restarts": 1}
    assert result["worker_processes"] == 4 + 3, "each killed worker was replaced"
