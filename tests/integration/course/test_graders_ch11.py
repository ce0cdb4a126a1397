"""Chapter 11's grader (`course.graders.ch11`): answers the recorded data supports pass,
every run; answers that ignore the noise, or return something else, fail with their cause."""

from __future__ import annotations

import statistics

import pytest

from cachequeue.course.graders import ch11


def by_ranges(reps):
    counts = sorted(reps)
    for low, high in zip(counts, counts[1:], strict=False):
        if min(reps[high]) <= max(reps[low]):
            return low
    return counts[-1]


def by_medians(reps):
    """Right, the other reading: the ratio of medians against the larger spread."""
    steps = sorted(reps.items())
    for (low, slow), (_, fast) in zip(steps, steps[1:], strict=False):
        noise = max(max(slow) / min(slow), max(fast) / min(fast))
        if statistics.median(fast) / statistics.median(slow) <= noise:
            return low
    return steps[-1][0]


def largest_median(reps):
    return max(reps, key=lambda n: statistics.median(reps[n]))


def first_median_drop(reps):
    counts = sorted(reps)
    for low, high in zip(counts, counts[1:], strict=False):
        if statistics.median(reps[high]) < statistics.median(reps[low]):
            return low
    return counts[-1]


def any_rise_counts(reps):
    counts = sorted(reps)
    for low, high in zip(counts, counts[1:], strict=False):
        if statistics.median(reps[high]) / statistics.median(reps[low]) <= 1:
            return low
    return counts[-1]


def in_given_order(reps):
    """Wrong: compares the settings in the dict's order, not by size."""
    counts = list(reps)
    for low, high in zip(counts, counts[1:], strict=False):
        if min(reps[high]) <= max(reps[low]):
            return low
    return counts[-1]


def fixed_process_counts(reps):
    """Wrong: assumes the keys are the recorded process counts 1, 2, 4."""
    for low, high in ((1, 2), (2, 4)):
        if min(reps[high]) <= max(reps[low]):
            return low
    return 4


def one_step_late(reps):
    """Wrong: returns the setting where the growth was found missing, not the one before it."""
    counts = sorted(reps)
    for low, high in zip(counts, counts[1:], strict=False):
        if min(reps[high]) <= max(reps[low]):
            return high
    return counts[-1]


def walking_items(reps):
    """Right, written differently: a while loop over the sorted items, ranges reading."""
    items = sorted(reps.items())
    i = 0
    while i + 1 < len(items) and max(items[i][1]) < min(items[i + 1][1]):
        i += 1
    return items[i][0]


MEASURED = {10: [900.0, 1000.0, 950.0], 50: [1900.0, 2100.0, 2000.0],
            250: [2900.0, 2750.0, 3000.0], 1000: [3050.0, 2950.0, 3000.0]}


def returns_text(reps):
    return str(by_ranges(reps))


def student(reps):
    raise NotImplementedError


@pytest.mark.parametrize("answer", [by_ranges, by_medians, walking_items],
                         ids=["ranges", "medians", "walking"])
def test_answers_the_data_supports_pass_every_run(answer):
    assert ch11.check_stops_growing(answer) == ch11.PASSED
    assert ch11.check_stops_growing(answer) == ch11.PASSED, "the same verdict on a second run"
    assert ch11.check_stops_growing(answer, MEASURED) == ch11.PASSED
    assert answer(MEASURED) == 250


@pytest.mark.parametrize("answer, message", [
    (largest_median, "这点增长在噪声之内，应返回 2"),
    (first_median_drop, "这点增长在噪声之内，应返回 2"),
    (any_rise_counts, "这点增长在噪声之内，应返回 2"),
    (returns_text, "应返回记录里的一个进程数或批大小"),
    (in_given_order, "先按大小排好再比较相邻两档.*第 12 节"),
    (fixed_process_counts, "不一定是 1、2、4.*第 12 节"),
    (one_step_late, "这点增长在噪声之内，应返回 2"),
    (student, "学生版"),
], ids=lambda value: getattr(value, "__name__", "message"))
def test_wrong_answers_fail_with_their_cause_every_run(answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch11.check_stops_growing(answer)


def test_both_readings_are_accepted_where_they_differ():
    supported = {system: ch11.answers(reps)
                 for system, reps in ch11.recorded_reps("worker_throughput").items()}
    assert supported["pgqueuer_b10"] == {1, 2}  # ranges: 2 overlaps 4; medians: 1 -> 2 noise
    assert all(len(answers) in (1, 2) for answers in supported.values())


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError):
        ch11.check_stops_growing("stops_growing")


def test_the_measured_sweep_is_graded_too():
    """An answer right on every made-up and recorded run, wrong on the notebook's own sweep."""
    def two_reps_read_as_growth(reps):  # wrong only where a setting has two repetitions
        if any(len(rates) == 2 for rates in reps.values()):
            return max(reps)
        return by_ranges(reps)

    assert ch11.check_stops_growing(two_reps_read_as_growth) == ch11.PASSED
    with pytest.raises(AssertionError, match="第 12 节现场量的批大小.*数据支持的答案是 \\[250\\]"):
        ch11.check_stops_growing(two_reps_read_as_growth, MEASURED | {10: [900.0, 950.0]})


@pytest.mark.parametrize("measured, error", [
    ([1, 2], TypeError), ({10: [1.0, 2.0]}, ValueError), ({10: "fast", 50: [1.0, 2.0]}, TypeError),
    ({10: [1.0], 50: [1.0, 2.0]}, ValueError), ({0: [1.0, 2.0], 50: [1.0, 2.0]}, ValueError),
    ({10: [1.0, float("nan")], 50: [1.0, 2.0]}, ValueError), ({10.5: [1.0, 2.0], 50: [1.0, 2.0]}, TypeError),
])
def test_a_bad_measured_sweep_is_refused(measured, error):
    with pytest.raises(error):
        ch11.check_stops_growing(by_ranges, measured)
