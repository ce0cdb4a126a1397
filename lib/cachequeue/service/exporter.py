"""The Prometheus text format of the service: the queue's series and this process's own.

Two kinds of series, two places they come from:

- **The queue's, database-wide** (`exposition(figures)` of a `queue.metrics.snapshot`):
  read from the tables, so every process that reads them reads the same numbers. They are
  served by one place only: the operator listener of the service started with
  `queue_metrics=True` (`cachequeue serve --metrics-port P --queue-metrics`), one replica
  or a process of its own; the other replicas leave them out, so a sum over replicas never
  counts a job twice.

      cq_jobs_pending{tenant,kind}              gauge: pending and due now
      cq_jobs_running{tenant,kind}              gauge: holding a lease
      cq_oldest_wait_seconds{tenant,kind}       gauge: how long the oldest due job waited
      cq_attempts_started_total{tenant,kind}    counter: attempts begun (claims)
      cq_attempts_ended_total{tenant,kind,outcome}  counter: done, retry, failed, expired,
                                                cancelled, released
      cq_attempt_duration_seconds{tenant,kind}  histogram of successful attempts

  Rates and ratios are Prometheus's to compute, over any window and any aggregation:
  `rate(cq_attempts_started_total[1m])` is the claim rate, `sum(rate(...{outcome="retry"}))
  / sum(rate(cq_attempts_ended_total))` the retry ratio, `histogram_quantile(0.95, sum by
  (le) (rate(cq_attempt_duration_seconds_bucket[5m])))` the p95 over every tenant. A
  windowed rate or a quantile exported as a gauge can be neither re-windowed nor summed,
  which is why none is. The counters count rows of job_attempts: they go down only when
  rows are deleted (a retention job), which Prometheus reads as a counter reset.

  Tenant labels are bounded. In the gauges, every tenant outside the busiest `TOP_TENANTS`
  is folded into `tenant="other"`: at most (TOP_TENANTS + 1) x kinds series per scrape,
  and since a gauge is the whole present state, a tenant changing places changes only which
  series exist. The counters and the histogram take their tenant labels from a fixed list
  instead (the Service's `counter_tenants`, empty by default: all under "other"), because
  a busiest-N rule would move a tenant's whole count into or out of "other" when it
  changes places, which Prometheus reads as a jump or a counter reset. Per-tenant detail
  beyond that belongs in a query (the notebook's DataFrames), not in a time series database.

- **This process's own** (`ProcessMetrics`, every replica): requests answered by route
  template, method and status, their durations, requests shed under overload, open event
  streams, and what `cachequeue serve` adds about the workers it supervises. Summing them
  over replicas is right, since each replica counts only its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from ..queue.metrics import DURATION_BUCKETS

__all__ = ["CONTENT_TYPE", "TOP_TENANTS", "WINDOW", "ProcessMetrics", "exposition"]

TOP_TENANTS = 20  # tenants that keep their own label; the rest are "other"
WINDOW = 60.0  # seconds of the windowed figures (queue.metrics); not exported
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# (figure, column, metric name, help)
_GAUGES = (
    ("depth", "pending", "cq_jobs_pending", "Pending jobs that are due now."),
    ("depth", "running", "cq_jobs_running", "Jobs running (holding a lease)."),
    ("oldest_wait", "seconds", "cq_oldest_wait_seconds",
     "How long the oldest due pending job has waited."),
)
_LABELS = ["tenant", "kind"]


class _Snapshot:
    """A collector that yields the series of one snapshot (read once, per scrape)."""

    def __init__(self, figures: Mapping[str, list[dict[str, Any]]]) -> None:
        self._figures = figures

    def collect(self) -> Iterator[Metric]:
        for figure, column, name, help_text in _GAUGES:
            gauge = GaugeMetricFamily(name, help_text, labels=_LABELS)
            for row in self._figures.get(figure, []):
                gauge.add_metric([row["tenant"], row["kind"]], float(row[column]))
            yield gauge
        yield from self._attempts()
        yield self._durations()

    def _attempts(self) -> Iterator[Metric]:
        started = CounterMetricFamily("cq_attempts_started", "Attempts begun (claims).",
                                      labels=_LABELS)
        ended = CounterMetricFamily("cq_attempts_ended", "Attempts ended, by outcome.",
                                    labels=[*_LABELS, "outcome"])
        totals: dict[tuple[str, str], int] = {}
        for row in self._figures.get("attempts", []):
            key = (row["tenant"], row["kind"])
            totals[key] = totals.get(key, 0) + row["attempts"]
            if row["outcome"] is not None:
                ended.add_metric([*key, row["outcome"]], row["attempts"])
        for key, count in totals.items():
            started.add_metric(list(key), count)
        yield started
        yield ended

    def _durations(self) -> Metric:
        histogram = HistogramMetricFamily("cq_attempt_duration_seconds",
                                          "Duration of successful attempts.", labels=_LABELS)
        series: dict[tuple[str, str], tuple[list[int], list[float]]] = {}
        for row in self._figures.get("durations", []):
            counts, total = series.setdefault((row["tenant"], row["kind"]),
                                              ([0] * (len(DURATION_BUCKETS) + 1), [0.0]))
            counts[row["bucket"]] += row["attempts"]
            total[0] += row["seconds"]
        for key, (counts, total) in series.items():
            cumulative, buckets = 0, []
            for bound, count in zip([*map(str, DURATION_BUCKETS), "+Inf"], counts, strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            histogram.add_metric(list(key), buckets, total[0])
        return histogram


def exposition(figures: Mapping[str, list[dict[str, Any]]]) -> bytes:
    """The Prometheus text exposition of a `queue.metrics.snapshot` (the queue's series)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(figures))
    return generate_latest(registry)


class _Gauges:
    """Gauges read when scraped: (name, help, callable returning the value)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, Callable[[], float]]] = []

    def collect(self) -> Iterator[Metric]:
        for name, help_text, read in self.entries:
            yield GaugeMetricFamily(name, help_text, value=float(read()))


class ProcessMetrics:
    """This process's counters and histograms (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = Counter("cq_http_requests", "Requests answered.",
                                 ["route", "method", "status"], registry=self.registry)
        self._seconds = Histogram("cq_http_request_duration_seconds",
                                  "Time to the end of each answer (streams: their whole life).",
                                  ["route"], registry=self.registry)
        self._shed = Counter("cq_http_shed", "Requests answered 503 overloaded at once.",
                             registry=self.registry)
        self._gauges = _Gauges()
        self.registry.register(self._gauges)

    def answered(self, route: str, method: str, status: int, seconds: float) -> None:
        method = method if method in _METHODS else "other"  # a bounded label set
        self._requests.labels(route, method, str(status)).inc()
        self._seconds.labels(route).observe(seconds)

    def shed(self) -> None:
        self._shed.inc()

    def gauge(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        """Export `read()` as the gauge `name` at every scrape."""
        self._gauges.entries.append((name, help_text, read))

    def register(self, collectors: Iterable[Any]) -> None:
        """More collectors of this process (e.g. the workers `cachequeue serve` supervises)."""
        for collector in collectors:
            self.registry.register(collector)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
