"""course.procs.fleet.Fleet.command: a fleet's workers run one job at a time unless told
otherwise, whatever `cachequeue worker`'s own default concurrency (10)."""

import pytest

from cachequeue.course.procs.fleet import Fleet


@pytest.fixture
def fleet():
    with Fleet("ch06") as f:
        yield f


def flags(cmd: list[str]) -> list[str]:
    return cmd[cmd.index("--name") + 2:]


def test_concurrency_one_is_passed_explicitly(fleet):
    cmd = fleet.command("w1", lease=2, poll=0.5)
    assert flags(cmd) == ["--concurrency", "1", "--lease", "2", "--poll", "0.5"]


def test_a_given_concurrency_replaces_it(fleet):
    cmd = fleet.command("r1", lease=5, concurrency=2, listen=False)
    assert flags(cmd) == ["--concurrency", "2", "--lease", "5", "--no-listen"]
    assert cmd.count("--concurrency") == 1


def test_batch_false_finishes_each_result_alone_and_a_size_passes_through(fleet):
    assert flags(fleet.command("w1", lease=2, batch=False)) == [
        "--concurrency", "1", "--lease", "2", "--no-batch"]
    assert flags(fleet.command("w2", batch=10)) == ["--concurrency", "1", "--batch", "10"]
