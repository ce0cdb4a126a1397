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


def returns_text(reps):
    return str(by_ranges(reps))


def student(reps):
    raise NotImplementedError


@pytest.mark.parametrize("answer", [by_ranges, by_medians], ids=["ranges", "medians"])
def test_answers_the_data_supports_pass_every_run(answer):
    assert ch11.check_stops_growing(answer) == ch11.PASSED
    assert ch11.check_stops_growing(answer) == ch11.PASSED, "the same verdict on a second run"


@pytest.mark.parametrize("answer, message", [
    (largest_median, "这点增长在噪声之内，应返回 2"),
    (first_median_drop, "这点增长在噪声之内，应返回 2"),
    (any_rise_counts, "这点增长在噪声之内，应返回 2"),
    (returns_text, "应返回记录里的一个进程数"),
    (student, "学生版"),
], ids=lambda value: getattr(value, "__name__", "message"))
def test_wrong_answers_fail_with_their_cause_every_run(answer, message):
    for _ in range(2):
        with pytest.raises(AssertionError, match=message):
            ch11.check_stops_growing(answer)


def test_both_readings_are_accepted_where_they_differ():
    supported = {system: ch11.answers(reps)
                 for system, reps in ch11.recorded_reps("worker_throughput").items()}
    assert supported["pgqueuer_b1"] == {1, 2}  # ranges: 2 overlaps 4; medians: 1 -> 2 noise
    assert all(len(answers) in (1, 2) for answers in supported.values())


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError):
        ch11.check_stops_growing("stops_growing")
