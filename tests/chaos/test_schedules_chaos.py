"""Schedules under faults (course.procs.schedulers): three scheduler processes racing on
every fire time of three schedules (one in Europe/Berlin across its fall-back night), one
SIGKILLed after it planned, one SIGSTOPped after it planned and resumed past the next fire
time, the server restarted, and half an hour in which no scheduler ran. Every fire time is
enqueued once, none beyond the missed-fire policy; the mutant without the unique key is
caught by verify.schedules.check with a witness.

A failure names the seed; SCHEDULES_SEED=<n> reruns exactly that plan."""

import json
import os

import pytest

from cachequeue.course.procs import schedulers

pytestmark = pytest.mark.db  # a private throw-away server, not DATABASE_URL, but a server

SEED = int(os.environ.get("SCHEDULES_SEED", "2026"))


def test_every_fire_time_is_enqueued_once_under_kills_pauses_a_restart_and_an_outage():
    result = schedulers.run(schedulers=3, steps=36, seed=SEED)
    shown = json.dumps({k: v for k, v in result.items() if k != "snapshot"}, indent=1,
                       default=str)
    assert result["violations"] == [], shown
    f = result["figures"]
    assert f["duplicated"] == 0 and f["missed_beyond_policy"] == 0 and f["beyond_policy"] == 0
    assert f["enqueued"] == f["distinct_enqueued"] == f["jobs"], shown
    assert {k: f[k] for k in ("kills", "stops", "restarts")} == {
        "kills": 1, "stops": 1, "restarts": 1}, shown
    assert f["scheduler_processes"] == 3 + 1, "the killed scheduler was replaced"
    assert f["stale_enqueued"] == 0, "the resumed scheduler's plan was past its windows"
    # The outage (steps 20-25) skipped every-5's fire times but the latest (skip), and
    # quarter-berlin's but the latest three (catch up 2): exactly what the policy gives up.
    fires = {}
    for row in result["snapshot"]["fires"]:
        fires.setdefault(row["schedule_id"], set()).add(row["fire_at"])
    down = [schedulers.START + i * schedulers.STEP for i in range(20, 26)]
    assert not fires[1] & set(down), "skip: nothing of the outage came late"
    assert schedulers.START + 26 * schedulers.STEP in fires[1]
    # quarter-berlin's two fire times in the outage (00:45, 01:00 UTC) were caught up late
    caught_up = {t for t in fires[2] if down[0] <= t <= down[-1]}
    assert sorted(t.isoformat() for t in caught_up) == ["2026-10-25T00:45:00+00:00",
                                                        "2026-10-25T01:00:00+00:00"]
    late = [r for r in result["snapshot"]["fires"] if r["schedule_id"] == 2
            and r["fire_at"] in caught_up]
    assert all(r["enqueued_at"] == schedulers.START + 26 * schedulers.STEP for r in late)
    assert f["skipped_by_policy"] == len(down), shown
    # The Berlin 02:30 of the fall-back night fired once, at its first occurrence.
    assert len(fires[3]) == 1 and min(fires[3]).isoformat() == "2026-10-25T00:30:00+00:00"


def test_the_mutant_without_the_unique_key_is_caught_with_a_witness():
    result = schedulers.run(schedulers=3, steps=12, seed=SEED, outage=(8, 9),
                            variant="no-fire-key")
    dupes = [v for v in result["violations"] if v["check"] == "schedule-duplicate"]
    assert dupes, json.dumps(result["figures"], indent=1)
    assert result["figures"]["duplicated"] > 0
    witness = dupes[0]["witness"]
    assert len(witness) >= 2 and len({(w["schedule_id"], w["fire_at"]) for w in witness}) == 1
    assert len({w["scheduler"] for w in witness}) >= 2, "two schedulers enqueued one fire time"
