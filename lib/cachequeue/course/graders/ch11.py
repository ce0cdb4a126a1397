"""The grader of chapter 11's exercise: a learner's `stops_growing`, run on recorded and made-up runs.

    print(ch11.check_stops_growing(stops_growing))   # "检查通过", or an AssertionError

`stops_growing(reps)` gets one configuration's throughput as a mapping from a setting to the
rate of each repetition: a recorded run's process counts (`{1: [481.0, 634.2, 642.0], 2:
[...], 4: [...]}`) or the batch sizes of the throughput mode (`{10: [...], 50: [...], 250:
[...], 1000: [...]}`, chapter 11 §12), in any order. It returns the setting from which a
larger one no longer pays: the first setting, in increasing order, whose step to the next
one is not a gain clear of the noise. If every step is a clear gain, the answer is the
largest setting.

"Clear of the noise" is chapter 11 §2's rule (the spread of a configuration across its
repetitions is the record's precision), read in either of two ways, both accepted:

- ranges: the slower count's fastest repetition is below the faster count's slowest one;
- medians: the ratio of the two medians exceeds the larger of the two spreads (max / min).

A step that passes neither is not a clear gain; where the two readings disagree, either
answer is one the data supports. The grader checks made-up runs where both readings agree
(growth all the way, a median that rises inside the noise, no clear growth at all, batch
sizes given out of order), every system of the two recorded runs in `data/bench/`, and,
when given (`measured=`), the batch-size sweep the learner's notebook measured itself. It
keeps no state: the same function gets the same verdict on every run with the same data.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...checks import check_callable, check_finite, check_int
from ..labs import perf

__all__ = ["CASES", "PASSED", "RECORDS", "answers", "check_measured", "check_stops_growing",
           "recorded_reps"]

PASSED = "检查通过"
SECTION = "第 2 节的“先看噪声”"
BATCH_SECTION = "第 12 节的批大小"
MAX_SETTINGS, MAX_REPS = 20, 50  # the most settings and repetitions a measured sweep may have
RECORDS = ("worker_throughput", "worker_throughput_embedded")

CASES: tuple[tuple[str, dict[int, list[float]], int, str], ...] = (
    ("clear growth at every step", {1: [100.0, 105.0, 110.0], 2: [200.0, 205.0, 210.0],
                                    4: [400.0, 410.0, 420.0]}, 4,
     "每一步各轮的范围都不重叠、增长都超出噪声：吞吐一直在长，应返回最大的进程数 4"),
    ("a median that rises inside the noise", {1: [100.0, 105.0, 110.0], 2: [190.0, 200.0, 210.0],
                                              4: [195.0, 215.0, 230.0]}, 2,
     f"从 2 到 4 个进程，中位数虽然从 200 升到 215，但两档各轮的范围重叠，中位数之比 1.08 也小于"
     f"最快与最慢之比 1.18：这点增长在噪声之内，应返回 2（{SECTION}）"),
    ("no clear growth at all", {1: [100.0, 120.0, 140.0], 2: [110.0, 125.0, 150.0],
                                4: [100.0, 130.0, 145.0]}, 1,
     f"从 1 个进程起，每一步的增长都在噪声之内：应返回 1（{SECTION}）"),
    ("batch sizes given out of order", {10: [900.0, 950.0, 1000.0], 1000: [2850.0, 3000.0, 3100.0],
                                        50: [1800.0, 1900.0, 2000.0], 250: [2800.0, 2900.0, 3000.0]},
     250,
     f"键是吞吐模式的批大小，字典里的顺序是 10、1000、50、250：先按大小排好再比较相邻两档。"
     f"10→50→250 每一步都明显增长，250→1000 两档各轮的范围重叠，应返回 250（{BATCH_SECTION}）"),
)


def _spread(rates: Sequence[float]) -> float:
    return max(rates) / min(rates)


def _clear_gain(low: Sequence[float], high: Sequence[float], reading: str) -> bool:
    if reading == "ranges":
        return min(high) > max(low)
    ratio = statistics.median(high) / statistics.median(low)
    return ratio > max(_spread(low), _spread(high))


def answers(reps: Mapping[int, Sequence[float]]) -> set[int]:
    """The process counts the data supports as "where throughput stops growing", under the
    ranges reading and the medians reading of the noise rule (one or two counts)."""
    counts = sorted(reps)
    found = set()
    for reading in ("ranges", "medians"):
        stop = counts[-1]
        for low, high in zip(counts, counts[1:], strict=False):
            if not _clear_gain(reps[low], reps[high], reading):
                stop = low
                break
        found.add(stop)
    return found


def recorded_reps(name: str) -> dict[str, dict[int, list[float]]]:
    """Per system of the recorded run `name`: process count -> the rate of each repetition."""
    by_system: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in perf.load(name)["runs"]:
        by_system[row["system"]][int(row["processes"])].append(float(row["rate"]))
    return {system: dict(sorted(reps.items())) for system, reps in by_system.items()}


def _ask(stops_growing: Callable[..., Any], reps: dict[int, list[float]]) -> Any:
    copy = {count: list(rates) for count, rates in reps.items()}  # the learner may mutate it
    try:
        got = stops_growing(copy)
    except NotImplementedError:
        raise AssertionError("stops_growing 还是学生版的 raise NotImplementedError：按练习的规则写出它") from None
    except Exception as exc:  # the learner's code failed on data it must handle
        raise AssertionError(
            f"stops_growing 在 {sorted(reps)} 这组设置上出错（{type(exc).__name__}: {exc}）：键可以是"
            f"任意的进程数或批大小，不一定是 1、2、4，要从 reps 本身取（{BATCH_SECTION}）") from None
    if isinstance(got, bool) or got not in reps:
        raise AssertionError(f"stops_growing 应返回记录里的一个进程数或批大小（{sorted(reps)} 之一）："
                             f"实际是 {got!r}")
    return got


def _judge(stops_growing: Callable[..., Any], reps: dict[int, list[float]], where: str,
           rates: str, tail: str = "") -> None:
    """Ask `stops_growing` about one run and fail unless it gives an answer the data supports;
    the message names the run (`where`), the rates (`rates`: {reps}) and ends with `tail`."""
    supported = answers(reps)
    got = _ask(stops_growing, reps)
    if got not in supported:
        raise AssertionError(
            f"{where}：数据支持的答案是 {sorted(supported)}，实际是 {got}（{rates}：{reps}{tail}）")


def check_measured(measured: Any) -> dict[int, list[float]]:
    """A sweep measured in the notebook: {setting (a positive int): [rates > 0]}, 2 to
    MAX_SETTINGS settings, each with 2 to MAX_REPS repetitions; a plain copy of it.
    TypeError/ValueError otherwise."""
    if not isinstance(measured, Mapping):
        raise TypeError(f"measured must be a mapping {{setting: [rates]}}, got {type(measured).__name__}")
    if not 2 <= len(measured) <= MAX_SETTINGS:
        raise ValueError(f"measured needs 2 to {MAX_SETTINGS} settings, got {len(measured)}")
    checked = {}
    for setting, rates in measured.items():
        check_int(setting, "each setting of measured", minimum=1)
        if isinstance(rates, (str, bytes)) or not isinstance(rates, Sequence):
            raise TypeError(f"the rates of setting {setting} must be a list, got {type(rates).__name__}")
        if not 2 <= len(rates) <= MAX_REPS:
            raise ValueError(f"setting {setting} needs 2 to {MAX_REPS} repetitions, got {len(rates)}")
        checked[setting] = [check_finite(r, f"a rate of setting {setting}", above=0) for r in rates]
    return checked


def check_stops_growing(stops_growing: Callable[..., Any], measured: Any = None) -> str:
    """Grade `stops_growing(reps) -> int` (module docstring); `measured`, if given, is the
    batch-size sweep the notebook measured (`check_measured`), graded like a recorded run.
    Returns PASSED; a wrong answer is an AssertionError whose message names the cause and
    the section that teaches it."""
    check_callable(stops_growing, "stops_growing", "a function stops_growing(reps)")
    sweep = None if measured is None else check_measured(measured)
    for _name, reps, expected, message in CASES:
        got = _ask(stops_growing, reps)
        if got != expected:
            raise AssertionError(f"{message}：实际是 {got}")
    for record in RECORDS:
        for system, reps in recorded_reps(record).items():
            _judge(stops_growing, reps, f"记录 {record} 里的 {system}", "各档各轮的速率")
    if sweep is not None:
        _judge(stops_growing, sweep, "本章第 12 节现场量的批大小", "各批大小各轮的速率",
               f"；{BATCH_SECTION}")
    return PASSED
