"""The worker's pure parts: log lines and their parser, the handler context, the timeline
figure, and the chaos verdict (each invariant check is shown to fail on a broken result)."""

import copy
import logging
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from cachequeue.course.procs import chaos
from cachequeue.course.views import timeline
from cachequeue.queue import logline
from cachequeue.queue.context import HANDED_BACK, LOST, JobContext, takes_context
from cachequeue.queue.jobs import Claim
from cachequeue.queue.logline import one_line

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_log_line_reads_back_with_its_types():
    message = logline.log_line("w1", "failed", job=7, attempt=2, retry_in=0.25, ok=True,
                               error="TimeoutError: vendor \"busy\" = slow")
    event = logline.parse("2026-01-01T00:00:00.000Z " + message)
    assert event == {"time": "2026-01-01T00:00:00.000Z", "worker": "w1", "event": "failed",
                     "job": 7, "attempt": 2, "retry_in": 0.25, "ok": True,
                     "error": 'TimeoutError: vendor "busy" = slow'}
    assert logline.parse("Traceback (most recent call last):") is None
    assert logline.log_line("w", "x", heartbeat=1 / 3) == "w x heartbeat=0.333333"


def test_info_writes_the_log_line_as_one_record_without_looking_up_the_caller():
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    keep, level = Keep(), logline.LOGGER.level
    logline.LOGGER.addHandler(keep)
    try:
        logline.LOGGER.setLevel(logging.WARNING)
        logline.info("w1", "claimed", job=7)
        assert records == [], "nothing is built or written below INFO"
        logline.LOGGER.setLevel(logging.INFO)
        logline.info("w1", "claimed", job=7, attempt=1)
    finally:
        logline.LOGGER.removeHandler(keep)
        logline.LOGGER.setLevel(level)
    [record] = records
    assert record.getMessage() == logline.log_line("w1", "claimed", job=7, attempt=1)
    assert (record.levelno, record.name, record.lineno) == (logging.INFO, "cachequeue.worker", 0)


def test_one_line_keeps_the_type_and_the_first_line_within_a_limit():
    assert one_line(ValueError("bad\nsecond line")) == "ValueError: bad"
    assert len(one_line(RuntimeError("x" * 500))) == 160


def claim():
    return Claim(job_id=1, tenant_id=1, kind="noop", payload={}, attempt=1,
                 lease_token=uuid.uuid4(), locked_until=T0, worker="w", schema="s")


def test_handlers_get_a_context_only_when_they_take_one():
    assert takes_context(lambda payload, ctx: None)
    assert takes_context(lambda *args: None)
    assert not takes_context(lambda payload: None)
    assert not takes_context(len)
    ctx = JobContext(claim(), "w1", connect=lambda: None)
    assert not ctx.should_stop() and ctx.wait(0) is False and ctx.reason is None
    woken = []
    waiter = threading.Thread(target=lambda: woken.append(ctx.wait(30)))
    waiter.start()
    ctx.halt(LOST)
    ctx.halt(HANDED_BACK)  # the first reason stays
    waiter.join(30)
    assert woken == [True] and ctx.lost and ctx.reason == LOST and ctx.should_stop()


def frame():
    return pd.DataFrame([
        {"job_id": 1, "attempt": 1, "worker": "w1", "start": 0.0, "end": 2.0,
         "outcome": "expired", "rejected": "finish", "rejected_at": 3.0},
        {"job_id": 2, "attempt": 1, "worker": "w1", "start": 0.5, "end": 1.0,
         "outcome": "done", "rejected": None, "rejected_at": None},
        {"job_id": 1, "attempt": 2, "worker": "w2", "start": 2.2, "end": None,
         "outcome": None, "rejected": None, "rejected_at": None},
    ]).astype(object)


def test_overlapping_attempts_of_one_worker_get_their_own_slots():
    assert timeline._slots(frame(), 4.0) == [(0, 2), (1, 2), (0, 1)]


def test_the_timeline_draws_one_lane_per_worker_with_its_marks():
    marks = [{"at": T0 + timedelta(seconds=1), "worker": "w1", "signal": "SIGSTOP"},
             {"at": T0 + timedelta(seconds=2.5), "worker": None, "signal": "server restart"},
             {"at": T0 - timedelta(seconds=9), "worker": "w9", "signal": "SIGKILL"}]  # before
    fig = timeline.plot_timeline(frame(), marks, since=T0)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["w1", "w2"]
    # The course's one vocabulary (cachequeue.lanes.KINDS): one legend entry per kind shown.
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {
        "租约过期（expired）", "完成（done）", "运行中", "被拒绝", "信号", "故障"}
    assert {"SIGSTOP", "server restart"} <= {t.get_text() for t in ax.texts}
    with pytest.raises(ValueError):
        timeline.plot_timeline(frame().iloc[0:0], since=T0)


GOOD = {
    "seed": 5, "jobs": 10, "planned": {"kills": 1, "stops": 1, "restarts": 1},
    "carried_out": {"kills": 1, "stops": 1, "restarts": 1},
    "exit_codes": {"w1": -9, "w1.1": 0, "w2": 0},
    "verdict": {"lost": 0, "duplicates": 0, "stuck_running": 0, "open_attempts": 0,
                "not_one_finished_attempt": 0, "results_not_of_their_attempt": 0,
                "outputs_not_of_their_attempt": 0, "not_one_charge": 0, "done": 10,
                "stale_reports_rejected": 2},
}


@pytest.mark.parametrize("path, value, words", [
    (("verdict", "lost"), 1, "lost = 1"),
    (("verdict", "duplicates"), 1, "duplicates = 1"),
    (("verdict", "stuck_running"), 2, "stuck_running = 2"),
    (("verdict", "results_not_of_their_attempt"), 1, "results_not_of_their_attempt"),
    (("verdict", "outputs_not_of_their_attempt"), 1, "outputs_not_of_their_attempt"),
    (("verdict", "not_one_charge"), 1, "not_one_charge"),
    (("verdict", "done"), 9, "done = 9"),
    (("verdict", "stale_reports_rejected"), 0, "no stale report was rejected"),
    (("carried_out", "restarts"), 0, "carried out"),
    (("exit_codes", "w2"), 1, "exited on their own"),
])
def test_every_chaos_invariant_can_fail_and_names_the_seed(path, value, words):
    assert chaos.failures(GOOD) == []
    broken = copy.deepcopy(GOOD)
    broken[path[0]][path[1]] = value
    [problem] = chaos.failures(broken)
    assert words in problem and "seed=5" in problem
