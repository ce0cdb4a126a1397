"""The throughput mode under verify (issue 33): real worker processes with `--prefetch`
(a local queue, large fenced completion batches sent by a sender thread, the local queue
handed back on a graceful stop) pass a seeded run with every fault kind; the same mode with
the `unfenced-batch` mutant (the batched completion checks only the job id, as
graphile-worker's does) is caught with a witness. Bounded: few jobs, a time limit, one
private server for the module; VERIFY_SEED=<n> reruns it with another seed."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from cachequeue.embedded import Server
from cachequeue.verify import driver, history

pytestmark = pytest.mark.private_server  # every run makes its own server

SEED = int(os.environ.get("VERIFY_SEED", "2026"))
PREFETCH = 8
TRIES = 3  # seeds a mutant gets (its catch needs a stale batch to meet a takeover)


@pytest.fixture(scope="module")
def server():
    with Server.private() as private:
        yield private


def _explain(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if k not in ("violations", "opportunities")}
                      | {"violations": result["violations"][:2]}, indent=1, default=str)


def test_the_throughput_mode_passes_with_every_fault_kind(server, tmp_path):
    result = driver.run(seed=SEED, jobs=30, workers=3, faults=driver.FAULTS, per_kind=1,
                        time_limit=60, prefetch=PREFETCH, server=server, workdir=tmp_path)
    assert result["settings"]["prefetch"] == PREFETCH, _explain(result)
    assert result["violations"] == [], _explain(result)
    assert result["verdict"] == "pass", _explain(result)
    assert all(result["faults_injected"][k] == 1 for k in driver.FAULTS if k != "cut"), \
        _explain(result)
    assert result["states"].get("done", 0) >= 25, _explain(result)
    # It was the throughput mode: one claim took more jobs than a worker has threads,
    # and completions went out in batches of several jobs.
    ops = history.read(Path(result["history"]))
    per_call = Counter(op["call"] for op in ops if op["f"] == "claim" and op["type"] == "ok"
                       and op.get("token") and op["process"] != "probe")
    assert max(per_call.values()) > driver.Settings.concurrency, per_call
    assert any(op["f"] == "finish" and op["type"] == "invoke" and op.get("batch", 0) > 1
               for op in ops)


def test_the_throughput_mode_with_an_unfenced_batch_is_caught(server):
    for seed in range(SEED, SEED + TRIES):
        result = driver.run(variant="unfenced-batch", seed=seed, jobs=20, workers=3,
                            faults=("pause", "blackhole"), per_kind=2, time_limit=40,
                            prefetch=PREFETCH, server=server)
        found = {v["check"] for v in result["violations"]}
        if found & {"stale-accepted", "one-result"}:
            break
    assert found & {"stale-accepted", "one-result"}, _explain(result)
    assert result["settings"]["prefetch"] == PREFETCH
    stale = [v for v in result["violations"] if v["check"] in ("stale-accepted", "one-result")]
    assert stale[0]["witness"] and len(stale[0]["witness"]) <= 6, stale[0]
    # The refused-then-accepted report is a batched finish (the sender's finish_many).
    finishes = [w for v in stale for w in v["witness"] if w.get("f") == "finish"]
    assert any(w.get("batch") for w in finishes), stale[:2]


def test_prefetch_is_refused_with_the_fair_claim_and_out_of_bounds():
    with pytest.raises(ValueError, match="tenant_cap"):
        driver.run(prefetch=4, tenant_cap=1)
    with pytest.raises(ValueError, match="prefetch"):
        driver.run(prefetch=driver.MAX_VERIFY_PREFETCH + 1)
