"""Two scrapes read as Prometheus reads them: increase() with resets and missing series,
histogram_quantile() with its edge cases, the families a scrape declares."""

import math

import pandas as pd
import pytest

from cachequeue.course.views import scrapes
from cachequeue.service import exporter

BEFORE = """# TYPE jobs_total counter
jobs_total{kind="noop",tenant="1"} 5
jobs_total{kind="noop",tenant="2"} 7
jobs_total{kind="noop",tenant="3"} 1
# TYPE depth gauge
depth{kind="noop",tenant="1"} 3
"""
AFTER = """# TYPE jobs_total counter
jobs_total{kind="noop",tenant="1"} 9
jobs_total{kind="noop",tenant="2"} 2
jobs_total{kind="noop",tenant="4"} 6
# TYPE depth gauge
depth{kind="noop",tenant="1"} 1
"""


def test_frame_has_a_row_per_sample_with_tenant_and_kind_first():
    frame = scrapes.frame(BEFORE)
    assert list(frame.columns) == ["sample", "tenant", "kind", "value"]
    assert len(frame) == 4 and frame["value"].sum() == 16
    assert scrapes.frame(BEFORE.encode()).equals(frame)
    with pytest.raises(TypeError):
        scrapes.frame(42)


def test_series_is_indexed_by_the_labels_its_rows_carry():
    depth = scrapes.series(scrapes.frame(BEFORE), "depth")
    assert depth.to_dict() == {("1", "noop"): 3.0}


def test_increase_reads_a_drop_as_a_reset_and_skips_series_seen_once():
    grown = scrapes.increase(scrapes.frame(BEFORE), scrapes.frame(AFTER), "jobs_total")
    assert grown.to_dict() == {("1", "noop"): 4.0,  # 5 -> 9
                               ("2", "noop"): 2.0}  # 7 -> 2: a reset, the new value counts
    # tenant 3 vanished and tenant 4 appeared: neither has two samples, so no increase


def _buckets(pairs):
    return pd.Series({le: count for le, count in pairs})


def test_histogram_quantile_interpolates_inside_the_bucket():
    buckets = _buckets([("1.0", 1), ("2.5", 2), ("5.0", 5), ("10.0", 10), ("30.0", 21),
                        ("+Inf", 21)])
    # rank 0.95 x 21 = 19.95 falls in (10, 30], which holds the 11 counts above 10
    assert scrapes.histogram_quantile(0.95, buckets) == pytest.approx(10 + 20 * 9.95 / 11)
    # rank 0.5 in the first bucket interpolates from 0
    assert scrapes.histogram_quantile(0.5, _buckets([("4.0", 4), ("+Inf", 4)])) == 2.0


def test_histogram_quantile_edges():
    in_inf = _buckets([("1.0", 1), ("2.0", 2), ("+Inf", 10)])
    assert scrapes.histogram_quantile(0.99, in_inf) == 2.0  # the largest finite bound
    assert math.isnan(scrapes.histogram_quantile(0.5, _buckets([("1.0", 0), ("+Inf", 0)])))
    with pytest.raises(ValueError):
        scrapes.histogram_quantile(1.5, in_inf)
    with pytest.raises(ValueError):
        scrapes.histogram_quantile(0.5, _buckets([("1.0", 1)]))  # no +Inf bucket


def test_quantiles_per_label_set():
    index = pd.MultiIndex.from_tuples([("1", "4.0"), ("1", "+Inf"), ("2", "4.0"), ("2", "+Inf")],
                                      names=["tenant", "le"])
    estimates = scrapes.quantiles(0.5, pd.Series([4, 4, 0, 2], index=index))
    assert estimates.to_dict() == {"1": 2.0, "2": 4.0}  # tenant 2: every count above 4.0


def test_bucket_names_the_bucket_a_value_falls_in():
    assert scrapes.bucket(20.0) == (10.0, 30.0)
    assert scrapes.bucket(30.0) == (10.0, 30.0)  # upper bounds are inclusive
    assert scrapes.bucket(0.001) == (0.0, 0.005)
    assert scrapes.bucket(1e6) == (300.0, math.inf)


def test_families_leave_out_the_created_gauges():
    figures = {"attempts": [{"tenant": "1", "kind": "noop", "outcome": "done", "attempts": 2}]}
    declared = scrapes.families(exporter.exposition(figures))
    assert declared["cq_attempts_started"] == "counter"
    assert declared["cq_attempt_duration_seconds"] == "histogram"
    metrics = exporter.ProcessMetrics()
    metrics.answered("/healthz", "GET", 200, 0.01)
    own = scrapes.families(metrics.exposition())
    assert own["cq_http_requests"] == "counter"
    assert not any(name.endswith("_created") for name in own)


def test_windowed_puts_the_figures_side_by_side():
    figures = {"depth": [{"tenant": "1", "kind": "noop", "pending": 2, "running": 1}],
               "claim_rate": [{"tenant": "1", "kind": "noop", "per_second": 0.5}],
               "duration": [{"tenant": "2", "kind": "noop", "p50": 1.0, "p95": 3.0}]}
    table = scrapes.windowed(figures)
    assert list(table.columns) == ["pending", "running", "oldest_wait", "claim_rate",
                                   "completion_rate", "failure_ratio", "retry_ratio", "p50", "p95"]
    assert table.loc[("1", "noop"), "claim_rate"] == 0.5
    assert math.isnan(table.loc[("2", "noop"), "pending"])
