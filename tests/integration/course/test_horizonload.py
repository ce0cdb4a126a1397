"""Chapter 14's experiment on a private server: dead row versions are kept exactly while a
horizon is held, removed by the first VACUUM after, and retention bounds the table."""

from __future__ import annotations

from datetime import UTC

import pytest

from cachequeue import db, embedded
from cachequeue.course import chapter
from cachequeue.course.procs import horizonload
from cachequeue.queue import health

pytestmark = pytest.mark.private_server


@pytest.fixture(scope="module")
def server():
    with embedded.Server.private(settings=horizonload.SETTINGS) as started:
        yield started


@pytest.fixture
def conn(server):
    with db.connect(url=server.url) as setup:
        chapter.reset(setup, "hl")
    with db.connect("hl", url=server.url) as connection:
        yield connection


@pytest.mark.parametrize("kind", horizonload.HOLDERS)
def test_each_holder_keeps_two_dead_versions_per_job(server, conn, kind):
    points = horizonload.run(conn, server.url, "hl", holder=kind, before=1, held=2, after=1,
                             jobs_per_round=20)
    held = [p for p in points if p.phase == "held"]
    assert [p.kept for p in held] == [40, 80]  # a claim and a finish: two UPDATEs per job
    assert points[0].kept == 0
    released = next(p for p in points if p.phase == "released")
    assert (released.removed, released.kept) == (80, 0)
    assert health.horizon_holders(conn) == []


def test_holder_is_seen_and_released(server, conn):
    with horizonload.Holder(server.url, "hl", "writer") as holder:
        assert [h.pid for h in health.horizon_holders(conn)] == [holder.pid]
    assert health.horizon_holders(conn) == []
    with pytest.raises(ValueError):
        horizonload.Holder(server.url, "hl", "replica")


def test_churn_with_retention_stays_smaller(conn):
    kept = horizonload.churn(conn, rounds=6, jobs_per_round=50, keep_seconds=60)
    assert kept[-1][0] == 300
    assert kept[-1][1] <= kept[2][1]  # the size stops growing once the policy purges


@pytest.mark.parametrize("kwargs", [{"before": 0}, {"jobs_per_round": 0}, {"holder": "x"}])
def test_run_refuses_bad_arguments(server, conn, kwargs):
    with pytest.raises(ValueError):
        horizonload.run(conn, server.url, "hl", **kwargs)


def test_the_bench_script_smoke_run(tmp_path, capsys):
    """bench/queue_health.py at the smallest size: the summary the closing note reads."""
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "bench" / "queue_health.py"
    spec = importlib.util.spec_from_file_location("queue_health", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "run.json"
    script.main(["--before", "1", "--held", "2", "--after", "1", "--jobs-per-round", "20",
                 "--churn-rounds", "2", "--out", str(out)])
    found = json.loads(out.read_text())
    assert found["summary"]["held"]["dead_kept"] == 2 * 2 * 20
    assert found["summary"]["released"]["removed"] == 80
    assert set(found["churn"]) == {"no_retention", "retention_two_rounds"}
    capsys.readouterr()


def test_rotation_drops_a_day_without_dead_rows(conn):
    from datetime import datetime, timedelta

    import psycopg

    from cachequeue.course.probes import rotation

    day0 = datetime(2026, 3, 1, tzinfo=UTC)
    assert rotation.create(conn, start=day0, days=2) == ["history_20260301", "history_20260302"]
    assert rotation.fill(conn, start=day0, days=2, per_day=300) == 600
    before = rotation.sizes(conn)
    assert rotation.delete_before(conn, day0 + timedelta(days=1)) == (300, 300)
    assert rotation.drop_before(conn, day0 + timedelta(hours=12)) == []  # the day is not over
    assert rotation.drop_before(conn, day0 + timedelta(days=1)) == ["history_20260301"]
    after = rotation.sizes(conn)
    assert after[0] == before[0] and after[1] < before[1] and after[2] == 1
    assert rotation.counts(conn) == (300, 300)
    with pytest.raises(psycopg.errors.CheckViolation):
        rotation.fill(conn, start=day0 + timedelta(days=5), days=1, per_day=1)
    with pytest.raises(ValueError):
        rotation.fill(conn, start=day0, days=0, per_day=1)
