"""The grader of chapter 11's exercise: a learner's `stops_growing`, run on recorded and made-up runs.

    print(ch11.check_stops_growing(stops_growing))   # "检查通过", or an AssertionError

`stops_growing(reps)` gets one system's throughput from a recorded run, as a mapping from a
process count to the rate of each repetition (`{1: [481.0, 634.2, 642.0], 2: [...], 4: [...]}`),
and returns the process count from which adding processes no longer pays: the first count
whose step to the next recorded count is not a gain clear of the noise. If every step is a
clear gain, the answer is the largest count.

"Clear of the noise" is chapter 11 §2's rule (the spread of a configuration across its
repetitions is the record's precision), read in either of two ways, both accepted:

- ranges: the slower count's fastest repetition is below the faster count's slowest one;
- medians: the ratio of the two medians exceeds the larger of the two spreads (max / min).

A step that passes neither is not a clear gain; where the two readings disagree, either
answer is one the data supports. The grader checks three made-up runs where both readings
agree (growth all the way, a median that rises inside the noise, no clear growth at all)
and every system of the two recorded runs in `data/bench/`. It keeps no state: the same
function gets the same verdict on every run.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...checks import check_callable
from ..labs import perf

__all__ = ["CASES", "PASSED", "RECORDS", "answers", "check_stops_growing", "recorded_reps"]

PASSED = "检查通过"
SECTION = "第 2 节的“先看噪声”"
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
    if isinstance(got, bool) or got not in reps:
        raise AssertionError(f"stops_growing 应返回记录里的一个进程数（{sorted(reps)} 之一）：实际是 {got!r}")
    return got


def check_stops_growing(stops_growing: Callable[..., Any]) -> str:
    """Grade `stops_growing(reps) -> int` (module docstring). Returns PASSED; a wrong answer is
    an AssertionError whose message names the cause and the section that teaches it."""
    check_callable(stops_growing, "stops_growing", "a function stops_growing(reps)")
    for _name, reps, expected, message in CASES:
        got = _ask(stops_growing, reps)
        if got != expected:
            raise AssertionError(f"{message}：实际是 {got}")
    for record in RECORDS:
        for system, reps in recorded_reps(record).items():
            supported = answers(reps)
            got = _ask(stops_growing, reps)
            if got not in supported:
                raise AssertionError(
                    f"记录 {record} 里的 {system}：数据支持的答案是 {sorted(supported)}，实际是 {got}"
                    f"（各档各轮的速率：{reps}）")
    return PASSED
