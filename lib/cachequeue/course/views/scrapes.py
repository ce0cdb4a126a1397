"""Prometheus scrapes as DataFrames, and what Prometheus computes from two of them.

Chapter 08 reads `/metrics` the way a Prometheus server would, without one: `frame(text)`
turns one scrape (the text exposition format) into a table of samples, and `take(conn,
top=, counter_tenants=)` is one scrape of the queue's series read straight from the tables; `increase(before,
after, name)` is Prometheus's `increase()` over the two scrapes (divide by the seconds
between them for `rate()`); `histogram_quantile(q, buckets)` is Prometheus's function of
that name, on the increase of a histogram's `_bucket` series, and `quantiles` applies it to
every label set; `bucket(value)` names the bucket a value falls in; `families(text)` lists
what a scrape declares. `windowed(figures)`
puts the windowed figures of a `queue.metrics.snapshot` (computed by SQL over the tables)
side by side, to compare with what the scrapes give.

What they reproduce, and what they leave out:

- `increase`: a counter that went down was reset (its process restarted), so its
  increase is its new value, as Prometheus reads a drop; a series missing from either
  scrape has no increase (Prometheus needs two samples of a series). Prometheus also
  extrapolates to the edges of its range window; with the two samples exactly at the
  window's edges, as here, there is nothing to extrapolate.
- `histogram_quantile`: the rank q x count is found in the cumulative buckets and the
  value interpolated linearly inside the bucket it falls in, from 0 for the first bucket;
  a rank in the `+Inf` bucket gives the largest finite bound. So the answer is an estimate
  whose error is bounded by the width of that bucket, not a measured quantile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import psycopg
from prometheus_client.parser import text_string_to_metric_families

from ...checks import check_finite, check_instance, check_text
from ...queue import metrics
from ...queue.metrics import DURATION_BUCKETS
from ...service import exporter

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["bucket", "families", "frame", "histogram_quantile", "increase", "quantiles", "series",
           "take", "windowed"]

_FIRST = ("tenant", "kind")  # label columns in this order first, then the others by name


def frame(text: str | bytes) -> pd.DataFrame:
    """One row per sample of a scrape: `sample` (the series name as exposed, e.g.
    `cq_attempts_started_total` or `cq_attempt_duration_seconds_bucket`), one column per
    label name (empty where a sample has no such label), and `value`."""
    import pandas as pd

    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_instance(text, "text", str)
    rows = [{"sample": s.name, **s.labels, "value": s.value}
            for family in text_string_to_metric_families(text) for s in family.samples]
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=["sample", "value"])
    labels = [c for c in table.columns if c not in ("sample", "value")]
    labels = [c for c in _FIRST if c in labels] + sorted(c for c in labels if c not in _FIRST)
    table[labels] = table[labels].fillna("")
    return table[["sample", *labels, "value"]]


def families(text: str | bytes) -> dict[str, str]:
    """The metric families a scrape declares, {name: type}, sorted by name; a family
    declared with no sample yet (a counter nothing has counted) is listed too. The
    `<name>_created` gauges that prometheus-client writes beside each of its own counters
    and histograms (when the series was created) are left out."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_instance(text, "text", str)
    declared = {f.name: f.type for f in text_string_to_metric_families(text)}
    return {name: kind for name, kind in sorted(declared.items())
            if not (name.endswith("_created") and name.removesuffix("_created") in declared)}


def take(conn: psycopg.Connection, *, top: int, counter_tenants: Iterable[int] = ()
         ) -> pd.DataFrame:
    """One scrape of the queue's series, as `frame` reads it: `service.exporter.exposition`
    of a `queue.metrics.snapshot` with these labelling settings."""
    return frame(exporter.exposition(metrics.snapshot(conn, top=top,
                                                      counter_tenants=counter_tenants)))


def series(scrape: pd.DataFrame, sample: str) -> pd.Series:
    """The values of one sample name, indexed by the labels its rows carry."""
    rows = scrape[scrape["sample"] == check_text(sample, "sample")]
    labels = [c for c in scrape.columns
              if c not in ("sample", "value") and (rows[c] != "").any()]
    if not labels:
        return rows["value"].reset_index(drop=True)
    return rows.set_index(labels)["value"].sort_index()


def increase(before: pd.DataFrame, after: pd.DataFrame, sample: str) -> pd.Series:
    """How much each series of counter `sample` grew between two scrapes, as Prometheus's
    `increase()` reads it: after - before, or `after` itself where the value went down (a
    reset); series missing from either scrape are left out."""
    old, new = series(before, sample), series(after, sample)
    old, new = old.align(new, join="inner")
    grown = new - old
    return grown.where(new >= old, new)


def histogram_quantile(q: float, buckets: pd.Series) -> float:
    """Prometheus's histogram_quantile(q, ...) on cumulative bucket counts indexed by their
    upper bound `le` ("0.5", "10.0", "+Inf" or floats), e.g. the increase of the `_bucket`
    series of one label set. NaN when the buckets count nothing."""
    q = check_finite(q, "q")
    if not 0 <= q <= 1:
        raise ValueError(f"q must be between 0 and 1, got {q!r}")
    bounds = sorted((float(le), float(count)) for le, count in buckets.items())
    if not bounds or not math.isinf(bounds[-1][0]):
        raise ValueError("buckets must include the +Inf bucket")
    total = bounds[-1][1]
    if total <= 0:
        return math.nan
    rank = q * total
    lower, below = 0.0, 0.0
    for i, (upper, count) in enumerate(bounds):
        if count >= rank:
            if math.isinf(upper):
                return bounds[i - 1][0] if i > 0 else math.nan
            if i == 0 and upper <= 0:
                return upper
            inside = count - below
            return lower + (upper - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = upper, count
    return bounds[-2][0]  # unreachable: the +Inf bucket holds the total


def quantiles(q: float, buckets: pd.Series) -> pd.Series:
    """histogram_quantile(q, ...) for every label set of bucket counts indexed by labels
    and `le` (e.g. an `increase` of a `_bucket` series); indexed by the other labels."""
    import pandas as pd

    others = [name for name in buckets.index.names if name != "le"]
    if not others:
        return pd.Series([histogram_quantile(q, buckets)])
    return buckets.groupby(level=others).apply(
        lambda part: histogram_quantile(q, part.droplevel(others)))


def bucket(value: float, bounds: tuple[float, ...] = DURATION_BUCKETS) -> tuple[float, float]:
    """The histogram bucket (lower, upper] that `value` falls in (lower 0 for the first)."""
    value = check_finite(value, "value")
    lower = 0.0
    for upper in bounds:
        if value <= upper:
            return (lower, float(upper))
        lower = float(upper)
    return (lower, math.inf)


_WINDOWED = (("depth", ("pending", "running")), ("oldest_wait", ("seconds",)),
             ("claim_rate", ("per_second",)), ("completion_rate", ("per_second",)),
             ("failure_ratio", ("ratio",)), ("retry_ratio", ("ratio",)),
             ("duration", ("p50", "p95")))


def windowed(figures: dict[str, list[dict]]) -> pd.DataFrame:
    """The windowed figures of a snapshot, one row per (tenant, kind): pending, running,
    oldest_wait, claim_rate, completion_rate, failure_ratio, retry_ratio, p50, p95
    (NaN where a figure has no row for that label set)."""
    import pandas as pd

    parts = []
    for name, columns in _WINDOWED:
        rows = pd.DataFrame(figures.get(name, []), columns=["tenant", "kind", *columns])
        rows = rows.set_index(["tenant", "kind"])[list(columns)]
        if columns in (("seconds",), ("per_second",), ("ratio",)):
            rows.columns = ["oldest_wait" if name == "oldest_wait" else name]
        parts.append(rows)
    return pd.concat(parts, axis=1).sort_index()
