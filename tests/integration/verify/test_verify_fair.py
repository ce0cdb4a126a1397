"""Check 8 on real runs: workers claiming fairly with a tenant cap keep it under faults, and
the same check finds the cap broken in a run whose workers claim oldest first."""

import json
from pathlib import Path

import pytest

from cachequeue.embedded import Server
from cachequeue.verify import checks, driver, history

pytestmark = pytest.mark.private_server  # every run makes its own server


@pytest.fixture(scope="module")
def server():
    with Server.private() as private:
        yield private


def test_fair_workers_keep_the_tenant_cap_under_kills(server, tmp_path):
    result = driver.run(seed=5, jobs=12, workers=3, tenants=2, tenant_cap=1,
                        faults=("kill",), per_kind=1, server=server, workdir=tmp_path)
    assert result["settings"]["tenant_cap"] == 1 and result["faults_injected"]["kill"] == 1
    assert result["violations"] == [], result["violations"][:3]
    assert result["states"].get("done", 0) >= 10, result["states"]


def test_oldest_first_workers_break_a_cap_they_were_never_given(server, tmp_path):
    """Two workers with two slots each, one tenant: its jobs run four at a time."""
    result = driver.run(seed=5, jobs=12, workers=2, faults=(), server=server, workdir=tmp_path)
    assert result["violations"] == [], result["violations"][:3]
    ops = history.read(Path(result["history"]))
    snap = json.loads((tmp_path / "snapshot.json").read_text())
    found = checks.check(ops, snap, lease=driver.Settings.lease, poll=driver.Settings.poll,
                         tenant_cap=1, only=["tenant-cap"])
    assert [v.check for v in found] == ["tenant-cap"], found
    assert len(found[0].witness) == 2  # the first moment: two attempts of tenant 1 open
