"""The queue's figures in the Prometheus text format, with bounded label cardinality.

`exposition(figures)` turns a `queue.metrics.snapshot` into the text a Prometheus server
scrapes from `/metrics` (prometheus-client's own encoder, so the format is exactly
Prometheus's). Every series has the labels `tenant` and `kind`; the snapshot has already
folded every tenant outside the busiest `TOP_TENANTS` into `tenant="other"`, so the number
of series is bounded by (TOP_TENANTS + 1) x kinds per metric, whatever the number of
tenants. Per-tenant detail beyond that belongs in a query (the notebook's DataFrames), not
in a time series database.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

__all__ = ["CONTENT_TYPE", "TOP_TENANTS", "WINDOW", "exposition"]

TOP_TENANTS = 20  # tenants that keep their own label; the rest are "other"
WINDOW = 60.0  # seconds of the rates and ratios

# (figure, column, metric name, help); duration is written with a `quantile` label.
_GAUGES = (
    ("depth", "pending", "cq_jobs_pending", "Pending jobs that are due now."),
    ("depth", "running", "cq_jobs_running", "Jobs running (holding a lease)."),
    ("oldest_wait", "seconds", "cq_oldest_wait_seconds",
     "How long the oldest due pending job has waited."),
    ("claim_rate", "per_second", "cq_claims_per_second", "Attempts started per second."),
    ("completion_rate", "per_second", "cq_completions_per_second", "Jobs done per second."),
    ("retry_ratio", "ratio", "cq_retry_ratio", "Share of ended attempts that will be retried."),
    ("failure_ratio", "ratio", "cq_failure_ratio", "Share of finished jobs that failed."),
)
_LABELS = ["tenant", "kind"]


class _Snapshot:
    """A collector that yields the gauges of one snapshot (read once, per scrape)."""

    def __init__(self, figures: Mapping[str, list[dict[str, Any]]]) -> None:
        self._figures = figures

    def collect(self) -> Iterator[Metric]:
        for figure, column, name, help_text in _GAUGES:
            gauge = GaugeMetricFamily(name, help_text, labels=_LABELS)
            for row in self._figures.get(figure, []):
                gauge.add_metric([row["tenant"], row["kind"]], float(row[column]))
            yield gauge
        duration = GaugeMetricFamily("cq_attempt_duration_seconds",
                                     "Duration of successful attempts (p50, p95).",
                                     labels=[*_LABELS, "quantile"])
        for row in self._figures.get("duration", []):
            for quantile, column in (("0.5", "p50"), ("0.95", "p95")):
                duration.add_metric([row["tenant"], row["kind"], quantile], float(row[column]))
        yield duration


def exposition(figures: Mapping[str, list[dict[str, Any]]]) -> bytes:
    """The Prometheus text exposition of a `queue.metrics.snapshot`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(figures))
    return generate_latest(registry)
