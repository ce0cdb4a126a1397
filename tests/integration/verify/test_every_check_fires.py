"""End to end, each check fires on the mutant that breaks what it checks, on every seed, and
the real queue passes the same seeds: real worker processes, the recorder, the checker.

A unit test can only show that a check fires on a history written by hand; if the recorder
writes a field where the checker does not read it (the retry delay once sat on the fail's
completion while the checker read the invoke), the unit test passes and the check never
fires. Here each named mutant runs a small real verify (the prober's scenarios and four
jobs, no nemesis: the prober gives each check its situation without luck) and must be
caught by its check, with a message that names the cause, on each of SEEDS.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cachequeue.embedded import Server
from cachequeue.verify import driver

pytestmark = pytest.mark.private_server

SEEDS = (1, 2, 3)

# mutant: (the check that must fire, words its message must contain)
EXPECTED = {
    "no-backoff": ("retry-delay", "before its delay"),
    "finish-unheld": ("terminal-left", "for done without an audited retry"),
    "unlocked-claim": ("lease-overlap", "lease was never ended"),
    "worker-clock": ("lease-length", "a lease of 3600"),
    "uncounted-takeover": ("worker-died", "UniqueViolation"),
    "no-token-check": ("stale-accepted", "after its lease ran out"),
    "unfenced-batch": ("stale-accepted", "after its lease ran out"),
    "heartbeat-after-expiry": ("renew-after-expiry", "after it ran out"),
}


@pytest.fixture(scope="module")
def server():
    with Server.private() as private:
        yield private


def _run(server, variant, seed):
    return driver.run(variant=variant, seed=seed, jobs=4, workers=2, faults=(), per_kind=0,
                      time_limit=30, server=server)


def _explain(result):
    return json.dumps({k: result[k] for k in ("variant", "seed", "verdict", "fired", "states",
                                              "cut_short")}
                      | {"violations": result["violations"][:2]}, indent=1, default=str)


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_each_mutant_is_caught_by_its_check_on_every_seed(variant, server):
    check, words = EXPECTED[variant]
    for seed in SEEDS:
        result = _run(server, variant, seed)
        mine = [v for v in result["violations"] if v["check"] == check]
        assert mine, f"{variant}, seed {seed}: {check} did not fire\n{_explain(result)}"
        assert any(words in v["message"] for v in mine), _explain(result)
        assert result["verdict"] == "violations" and result["opportunities"][check]["count"] > 0


def test_the_real_queue_passes_the_same_seeds_beside_a_busy_loop(server):
    # One core kept busy for the length of the runs (bounded: it ends by itself).
    busy = subprocess.Popen([sys.executable, "-c",
                             "import time\nend = time.time() + 60\nwhile time.time() < end: pass"])
    try:
        for seed in SEEDS:
            result = _run(server, "real", seed)
            assert result["verdict"] == "pass", _explain(result)
            assert result["inconclusive"] == [] and result["unsettled_at_end"] == 0
            # Every check the prober serves had its situation (without faults, no kill for
            # reclaim and no cut answer for the two ambiguity checks).
            assert set(result["without_opportunity"]) <= {
                "reclaim", "ambiguous-as-failure", "false-success"}, result["opportunities"]
    finally:
        busy.kill()
        busy.wait()
