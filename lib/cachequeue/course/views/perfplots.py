"""Figures of chapters 11 and 13 (performance and scale), drawn from recorded benchmark runs (`perf.load`).

Each plot function takes the run's JSON document (or the part named) and returns a Figure
with Chinese labels (importing `course.fonts` registers the font); `targets_table` turns a
run's `targets` into a short table.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from .fonts import CJK_FONT

__all__ = ["CJK_FONT", "plot_cache_hits", "plot_claim_cost", "plot_latency", "plot_throughput",
           "plot_workloads", "targets_table"]

_MARKERS = "os^vD<>"
_LOG_SPREAD = 30  # fastest / slowest median above which the rate axis is logarithmic


def plot_throughput(run: Mapping[str, Any]) -> Figure:
    """Median jobs/s against worker processes, one line per system (bench/worker_throughput.py,
    bench/broker_throughput.py). Where a run marks some of its systems as defaults
    (`systems[name]["default"]`), the others are dashed and the defaults labelled."""
    many = len(run["median_jobs_per_second"]) > len(_MARKERS)
    fig = Figure(figsize=(8.4 if many else 6.4, 4.4 if many else 3.8))
    ax = fig.subplots()
    _rate_lines(ax, run, run["median_jobs_per_second"], _drain_title(run))
    fig.tight_layout()
    return fig


def _drain_title(run: Mapping[str, Any]) -> str:
    """'N 个空任务的排空速度', naming the systems whose drains had another size (--fast-jobs)."""
    jobs = run["parameters"]["jobs"]
    other: dict[int, set[str]] = {}
    for r in run.get("runs", []):
        if r.get("jobs", jobs) != jobs:
            other.setdefault(r["jobs"], set()).add(r["system"])
    title = f"{jobs:,} 个空任务的排空速度"
    for size, systems in sorted(other.items(), reverse=True):
        title += f"\n（{'、'.join(sorted(systems))} 每次 {size:,} 个）"
    return title


def plot_workloads(run: Mapping[str, Any]) -> Figure:
    """The no-op and the slow workload of one run side by side (bench/broker_throughput.py):
    median jobs/s against worker processes, one line per system; the slow panel adds its
    ceiling, processes / the handler's seconds (grey, dotted)."""
    slow = run["slow"]
    fig = Figure(figsize=(9.6, 3.8))
    left, right = fig.subplots(1, 2)
    _rate_lines(left, run, run["median_jobs_per_second"],
                f"空任务（每次 {run['parameters']['jobs']:,} 个）")
    ceiling = slow["ceiling_jobs_per_second"]
    counts = sorted(ceiling, key=int)
    right.plot([int(c) for c in counts], [ceiling[c] for c in counts], ":", color="grey",
               label=f"上限：进程数 / {slow['handler_sleep_s']:g} 秒")
    _rate_lines(right, run, slow["median_jobs_per_second"],
                f"慢任务（处理函数等待 {slow['handler_sleep_s'] * 1000:g} 毫秒，每次 {slow['jobs']:,} 个）")
    fig.tight_layout()
    return fig


def _rate_lines(ax: Any, run: Mapping[str, Any], rates: Mapping[str, Mapping[str, float]],
                title: str) -> None:
    """One line of median jobs/s per system on `ax`. Where a run marks some of its systems
    as defaults (`systems[name]["default"]`), the others are dashed and the defaults labelled."""
    default = {name: bool(system.get("default", True))
               for name, system in run.get("systems", {}).items()}
    mixed = len(set(default.values())) > 1  # only then does "default" tell lines apart
    for (system, by_count), marker in zip(rates.items(), itertools.cycle(_MARKERS)):
        counts = sorted(by_count, key=int)
        dashed = mixed and not default.get(system, True)
        ax.plot([int(c) for c in counts], [by_count[c] for c in counts],
                "--" if dashed else "-", marker=marker,
                label=system + ("（默认）" if mixed and default.get(system) else ""))
    ax.set_xticks(run["parameters"]["processes"])
    ax.set_xlabel("工作者进程数")
    ax.set_ylabel("任务/秒（中位数）")
    ax.set_title(title)
    values = [v for by_count in rates.values() for v in by_count.values() if v]
    if values and max(values) > _LOG_SPREAD * min(values):
        # a thousand-fold range (pg-boss's default polls, graphile-worker's local queue):
        # on a linear axis every slow system would lie on the floor
        ax.set_yscale("log")
        ax.set_ylabel("任务/秒（中位数，对数刻度）")
    else:
        ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if len(rates) > len(_MARKERS):  # many lines: the legend beside the axes, not over them
        ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.legend(fontsize="small")


def plot_claim_cost(run: Mapping[str, Any]) -> Figure:
    """Execution time and shared buffers of one claim against finished rows (bench/claim_cost.py)."""
    sizes = sorted(run["sizes"].values(), key=lambda s: s["finished_rows"])
    labels = [f"{s['finished_rows']:,}" for s in sizes]
    fig = Figure(figsize=(7.2, 3.4))
    left, right = fig.subplots(1, 2)
    left.bar(labels, [s["execution_ms_median"] for s in sizes], color="tab:blue")
    left.set_ylabel("执行时间（毫秒，中位数）")
    left.set_title("一次领取的执行时间")
    right.bar(labels, [s["shared_buffers_median"] for s in sizes], color="tab:orange")
    right.set_ylabel("访问的共享缓冲页（中位数）")
    right.set_title("一次领取访问的页")
    for ax in (left, right):
        ax.set_xlabel("表中已完成的任务行数")
        ax.set_ylim(bottom=0)
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_latency(latency: Mapping[str, Mapping[str, Any]]) -> Figure:
    """Submit-to-start latency of each system's idle worker: the sorted samples (an ECDF)."""
    fig = Figure(figsize=(6.4, 3.8))
    ax = fig.subplots()
    for system, result in latency.items():
        values = sorted(result["values"])
        n = len(values)
        ax.step([v * 1000 for v in values], [(k + 1) / n for k in range(n)], where="post",
                label=f"{system}（p50 {result['p50'] * 1000:.1f} ms，p99 {result['p99'] * 1000:.1f} ms）")
    ax.set_xscale("log")
    ax.set_xlabel("从提交到处理函数开始（毫秒，对数坐标）")
    ax.set_ylabel("累计比例")
    ax.set_title("空闲队列上的启动延迟")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def plot_cache_hits(costs_us: Mapping[str, float]) -> Figure:
    """Microseconds per cache hit, one bar per contender (bench/cache_hit.py, redis_hit.py)."""
    if not costs_us:
        raise ValueError("nothing to plot: give at least one contender")
    names = list(costs_us)
    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.subplots()
    ax.barh(names, [costs_us[n] for n in names], color="tab:green")
    ax.set_xscale("log")
    ax.set_xlabel("每次命中的耗时（微秒，中位数，对数坐标）")
    ax.set_title("一次缓存命中的代价")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    return fig


_SHORT = {" (target >= ": " ≥ ", "submit-to-start p50 <= 3 ms and p99 <= 6 ms": "启动延迟 p50 ≤ 3 ms、p99 ≤ 6 ms",
          "grows from 1 to 2 processes": "2 个进程快于 1 个", "idle transactions <= 0.3/s": "空闲事务 ≤ 0.3/s"}


def _label(name: str) -> str:
    for long, brief in _SHORT.items():
        name = name.replace(long, brief)
    return name.rstrip(")")


def _shown(measured: Any) -> str:
    if isinstance(measured, Mapping):
        return ", ".join(f"{key}: {value:g}" for key, value in measured.items())
    return f"{measured:g}"


def targets_table(targets: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per target of a recorded run (bench/worker_throughput.py `targets`): a short
    Chinese label, the figures measured (one string) and whether it holds."""
    if not isinstance(targets, Mapping):
        raise TypeError(f"targets must be a mapping {{name: {{measured, holds}}}}, "
                        f"got {type(targets).__name__}")
    return pd.DataFrame({_label(name): {"测得": _shown(t["measured"]), "达到": bool(t["holds"])}
                         for name, t in targets.items()}).T
