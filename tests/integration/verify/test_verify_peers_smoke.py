"""bench/verify_peers.py --quick (issue 21, the peers under the same faults): both peers' own
workers, one SIGKILL mid-job each, 3 s observed after it. Neither peer can have run the
killed job again within 3 s (procrastinate never re-runs a stalled job by itself; pgqueuer
waits for its 30 s heartbeat_timeout), so the killed job must be reported not completed,
left in 'doing' / 'picked', with verify's `lost` check naming it and a witness that holds
the kill. Needs the `bench` extra (procrastinate, pgqueuer); its own private server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("procrastinate", reason="pip install -e '.[bench]'")
pytest.importorskip("pgqueuer", reason="pip install -e '.[bench]'")

pytestmark = pytest.mark.private_server  # Server.private(): DATABASE_URL changes nothing

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "verify_peers.py"


def test_a_job_killed_mid_run_is_reported_stuck_with_its_witness(tmp_path):
    out = tmp_path / "peers.json"
    subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)], check=True,
                   capture_output=True, text=True, timeout=120)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {r["peer"] for r in doc["runs"]} == {"procrastinate", "pgqueuer"}
    for r in doc["runs"]:
        [kill] = [op for op in r["fault_detail"] if op["f"] == "kill"]
        killed = kill["job"]
        assert r["submitted"] == 3 and r["completed"] + r["lost"] == 3
        assert r["stuck"] >= 1 and r["duplicates"] == 0 and r["doubled_effects"] == 0
        assert killed in r["jobs"]["stuck"] and killed in r["jobs"]["lost"], r["jobs"]
        stuck = [a for a in r["anomalies"] if a["kind"] == "stuck"]
        assert stuck and all(a["peer_status"] in ("doing", "picked") for a in stuck)
        assert all(kill in a["witness"] for a in stuck)
        assert killed in r["verify_checks"]["violations_jobs"]["lost"], r["verify_checks"]
        assert any(e["code"] == -9 for e in r["worker_exits"])  # the supervisor replaced it
    assert doc["versions_and_defaults"]["pgqueuer"]["run_defaults"]["heartbeat_timeout"] == 30
