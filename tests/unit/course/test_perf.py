"""course.perf arithmetic, stamps and recorded runs; course.perfplots figures (no database)."""

from __future__ import annotations

import time

import pytest

from cachequeue.course.labs import perf
from cachequeue.course.views import perfplots


def test_summary_gives_median_p99_and_max_of_the_sorted_values():
    values = [float(v) for v in range(100, 0, -1)]  # 100 .. 1, unsorted
    out = perf.summary(values)
    assert out["p50"] == 50.5
    assert out["p99"] == pytest.approx(99.01)
    assert out["max"] == 100.0
    assert out["values"] == sorted(values)
    assert perf.summary([0.25]) == {"p50": 0.25, "p99": 0.25, "max": 0.25, "values": [0.25]}


def test_summary_refuses_nothing_and_non_numbers():
    with pytest.raises(ValueError, match="at least one"):
        perf.summary([])
    with pytest.raises(TypeError):
        perf.summary(["1"])


def test_jobs_ceiling_divides_commit_capacity_by_commits_per_job():
    assert perf.jobs_ceiling(2000.0, 1.0) == 2000.0
    assert perf.jobs_ceiling(2000.0, 0.1) == pytest.approx(20000.0)
    with pytest.raises(ValueError, match="must be > 0"):
        perf.jobs_ceiling(0.0, 1.0)
    with pytest.raises(ValueError, match="must be > 0"):
        perf.jobs_ceiling(100.0, -1.0)


def test_stamps_round_trip_and_noop_stamps_only_when_asked(tmp_path):
    path = str(tmp_path / "stamps")
    assert perf.read_stamps(path) == {}
    perf.noop({})  # no stamp file named: nothing happens
    assert perf.read_stamps(path) == {}
    perf.noop({"n": 3, "stamp": path})
    perf.stamp(path, 4)
    stamps = perf.read_stamps(path)
    assert sorted(stamps) == [3, 4] and stamps[3] <= stamps[4]
    assert {"noop": perf.noop} == perf.NOOP_HANDLERS


def test_recorded_runs_load_with_their_machine_facts():
    names = perf.recorded()
    assert {"worker_throughput", "claim_cost"} <= set(names)
    run = perf.load("worker_throughput")
    assert run["machine"]["cpus"] >= 1 and run["machine"]["postgresql"]["server_version"]
    assert set(run["median_jobs_per_second"]) == set(run["parameters"]["systems"])
    with pytest.raises(ValueError, match="no recorded run 'nope'"):
        perf.load("nope")


def test_describe_url_never_shows_the_password():
    text = perf.describe_url("postgresql://me:secret@127.0.0.1:5433/db1")
    assert text == "127.0.0.1:5433/db1" and "secret" not in text


RUN = {"parameters": {"jobs": 100, "processes": [1, 2]},
       "systems": {"a": {"default": True}, "b": {"default": False}},
       "median_jobs_per_second": {"a": {"1": 10.0, "2": 20.0}, "b": {"1": 5.0, "2": 9.0}}}


def test_throughput_figure_has_one_line_per_system():
    fig = perfplots.plot_throughput(RUN)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["a（默认）", "b"]
    assert list(ax.get_lines()[1].get_ydata()) == [5.0, 9.0]


def test_twelve_systems_are_all_drawn_on_a_log_axis_past_a_wide_spread():
    names = [f"s{k}" for k in range(12)]
    run = {"parameters": {"jobs": 5000, "processes": [1, 2]},
           "systems": {n: {"default": n == "s0"} for n in names},
           "median_jobs_per_second": {n: {"1": 0.5 + k * 3000, "2": 1.0 + k * 3000}
                                      for k, n in enumerate(names)},
           "runs": [{"system": "s11", "jobs": 50000}, {"system": "s0", "jobs": 6}]}
    ax = perfplots.plot_throughput(run).axes[0]
    assert len(ax.get_lines()) == 12  # none dropped when the markers run out
    assert ax.get_yscale() == "log"  # 0.5 to 33,000 jobs/s
    assert "s11 每次 50,000 个" in ax.get_title() and "s0 每次 6 个" in ax.get_title()
    assert perfplots.plot_throughput(RUN).axes[0].get_yscale() == "linear"


def test_workloads_figure_draws_the_slow_ceiling_beside_the_no_op_rates():
    run = {**RUN, "slow": {"handler_sleep_s": 0.05, "jobs": 20,
                           "median_jobs_per_second": {"a": {"1": 19.0, "2": 38.0},
                                                      "b": {"1": 18.0, "2": 35.0}},
                           "ceiling_jobs_per_second": {"1": 20.0, "2": 40.0}}}
    fig = perfplots.plot_workloads(run)
    left, right = fig.axes
    assert [line.get_label() for line in left.get_lines()] == ["a（默认）", "b"]
    ceiling, a, b = right.get_lines()
    assert list(ceiling.get_ydata()) == [20.0, 40.0] and "0.05" in ceiling.get_label()
    assert list(b.get_ydata()) == [18.0, 35.0]


def test_slow_handler_stamps_then_waits(tmp_path):
    path = str(tmp_path / "stamps")
    started = time.monotonic()
    perf.SLOW_HANDLERS["noop"]({"n": 1, "stamp": path})
    assert time.monotonic() - started >= perf.SLOW_S
    assert list(perf.read_stamps(path)) == [1]


def test_claim_cost_latency_and_cache_figures():
    claim = {"sizes": {"0": {"finished_rows": 0, "execution_ms_median": 0.5,
                             "shared_buffers_median": 20},
                       "1000": {"finished_rows": 1000, "execution_ms_median": 0.6,
                                "shared_buffers_median": 22}}}
    assert len(perfplots.plot_claim_cost(claim).axes) == 2
    latency = {"x": {"p50": 0.002, "p99": 0.004, "values": [0.001, 0.002, 0.004]}}
    assert len(perfplots.plot_latency(latency).axes[0].get_lines()) == 1
    fig = perfplots.plot_cache_hits({"local": 0.3, "shared": 60.0})
    assert len(fig.axes[0].patches) == 2
    with pytest.raises(ValueError, match="nothing to plot"):
        perfplots.plot_cache_hits({})


def test_targets_table_has_a_short_label_the_figures_and_whether_each_holds():
    table = perfplots.targets_table({
        "cachequeue_c10 / pgqueuer_b10 (target >= 1)": {"measured": {"1": 0.9, "2": 2.165},
                                                        "holds": False},
        "cachequeue_c10 idle transactions <= 0.3/s": {"measured": 0.2, "holds": True}})
    assert table.to_dict("index") == {
        "cachequeue_c10 / pgqueuer_b10 ≥ 1": {"测得": "1: 0.9, 2: 2.165", "达到": False},
        "cachequeue_c10 空闲事务 ≤ 0.3/s": {"测得": "0.2", "达到": True}}
    with pytest.raises(TypeError, match="targets must be a mapping"):
        perfplots.targets_table([("x", 1)])
