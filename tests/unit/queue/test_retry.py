"""cachequeue.retry: the backoff formula, its documented schedule, each jitter mode's bounds, validation."""

import math
import random
import re

import pytest

from cachequeue.queue.retry import PermanentError, RetryableError, RetryPolicy


def test_ceiling_doubles_from_base_until_the_cap():
    policy = RetryPolicy(max_attempts=10, base=0.5, cap=10.0)
    assert [policy.ceiling(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_without_jitter_the_delay_is_the_ceiling():
    policy = RetryPolicy(base=2.0, cap=30.0, jitter=False)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 16.0, 30.0]


def _schedule_row(doc, label):
    """The cells of the worked schedule's row `label`, e.g. '"equal" delay in s'."""
    return [cell.strip() for cell in re.search(re.escape(label) + r"\s*\|(.*)", doc).group(1).split("|")]


def test_docstring_schedule_is_what_the_code_computes():
    doc = RetryPolicy.__doc__
    header = re.search(r"Worked schedule for RetryPolicy\((.*?)\):", doc)
    kwargs = dict(part.split("=") for part in header.group(1).replace(" ", "").split(","))
    policy = RetryPolicy(max_attempts=int(kwargs["max_attempts"]), base=float(kwargs["base"]),
                         cap=float(kwargs["cap"]))
    attempts = [int(x) for x in _schedule_row(doc, "failed attempt n")]
    ceilings = [float(x) for x in _schedule_row(doc, "ceiling(n) in s")]
    assert attempts == list(range(1, policy.max_attempts))
    assert ceilings == policy.schedule() == [policy.ceiling(n) for n in attempts]


@pytest.mark.parametrize("mode", ["full", "equal", "none"])
def test_docstring_schedule_gives_each_mode_its_range(mode):
    doc = RetryPolicy.__doc__
    policy = RetryPolicy(max_attempts=8, base=1.0, cap=60.0, jitter=mode)
    documented = []
    for cell in _schedule_row(doc, f'"{mode}" delay in s'):
        low, _, high = cell.partition("-")
        documented.append((float(low), float(high or low)))
    assert documented == [(policy.floor(n), policy.ceiling(n)) for n in range(1, 8)]


def test_full_jitter_stays_within_zero_and_the_ceiling_and_spreads():
    policy = RetryPolicy(base=1.0, cap=60.0)
    rng = random.Random(42)
    for attempt in (1, 3, 6, 9):
        draws = [policy.delay(attempt, rng) for _ in range(500)]
        ceiling = policy.ceiling(attempt)
        assert all(0.0 <= d <= ceiling for d in draws)
        # Full jitter spreads over the whole range, not a band near the ceiling.
        assert min(draws) < 0.1 * ceiling and max(draws) > 0.9 * ceiling


def test_equal_jitter_never_waits_less_than_half_the_ceiling_and_spreads_above_it():
    policy = RetryPolicy(base=1.0, cap=60.0, jitter="equal")
    rng = random.Random(42)
    for attempt in (1, 3, 6, 9):
        draws = [policy.delay(attempt, rng) for _ in range(500)]
        ceiling = policy.ceiling(attempt)
        assert policy.floor(attempt) == ceiling / 2
        assert all(ceiling / 2 <= d <= ceiling for d in draws)
        assert min(draws) < 0.55 * ceiling and max(draws) > 0.95 * ceiling


def test_each_mode_has_its_floor():
    assert [RetryPolicy(base=4.0, jitter=j).floor(2) for j in (True, "full", "equal", "none", False)] \
        == [0.0, 0.0, 4.0, 8.0, 8.0]


def test_true_and_false_are_the_full_and_no_jitter_modes():
    assert (RetryPolicy().mode, RetryPolicy(jitter=True).mode, RetryPolicy(jitter=False).mode) \
        == ("full", "full", "none")
    for named, flag in (("full", True), ("none", False)):
        draws = [[RetryPolicy(jitter=j).delay(n, random.Random(3)) for n in (1, 2, 5)]
                 for j in (named, flag)]
        assert draws[0] == draws[1]


def test_full_jitter_draws_what_it_always_drew():
    # jobs.fail and the model both call delay(attempt, rng): one uniform(0, ceiling) per
    # call, so a seeded run schedules the same retries as before the modes existed.
    rng, same = random.Random(2026), random.Random(2026)
    policy = RetryPolicy(base=8.0, cap=60.0)
    assert [policy.delay(n, rng) for n in (1, 2, 3)] == [same.uniform(0.0, c) for c in (8.0, 16.0, 32.0)]


def test_equal_jitter_draws_one_number_per_delay():
    rng, same = random.Random(5), random.Random(5)
    policy = RetryPolicy(base=8.0, cap=60.0, jitter="equal")
    assert [policy.delay(n, rng) for n in (1, 2)] == [4.0 + same.uniform(0.0, 4.0),
                                                      8.0 + same.uniform(0.0, 8.0)]


@pytest.mark.parametrize("jitter", [True, "full", "equal"])
def test_jitter_is_reproducible_with_a_seeded_rng(jitter):
    policy = RetryPolicy(jitter=jitter)
    first = [policy.delay(n, random.Random(7)) for n in (1, 2, 3)]
    again = [policy.delay(n, random.Random(7)) for n in (1, 2, 3)]
    assert first == again


def test_huge_attempt_numbers_stay_at_the_cap():
    assert RetryPolicy(cap=60.0, jitter=False).delay(10_000) == 60.0


@pytest.mark.parametrize("kwargs, error", [
    ({"max_attempts": 0}, ValueError),
    ({"max_attempts": True}, TypeError),
    ({"max_attempts": 2.0}, TypeError),
    ({"base": 0}, ValueError),
    ({"base": -1.0}, ValueError),
    ({"base": math.nan}, ValueError),
    ({"base": "1"}, TypeError),
    ({"cap": math.inf}, ValueError),
    ({"base": 10.0, "cap": 5.0}, ValueError),
    ({"deadline": 0}, ValueError),
    ({"deadline": False}, TypeError),
    ({"jitter": 1}, TypeError),
    ({"jitter": None}, TypeError),
    ({"jitter": "decorrelated"}, ValueError),
    ({"jitter": "Full"}, ValueError),
])
def test_bad_fields_are_refused_with_a_clear_error(kwargs, error):
    with pytest.raises(error, match=next(iter(kwargs)) if "cap" not in kwargs else "cap"):
        RetryPolicy(**kwargs)


@pytest.mark.parametrize("attempt, error", [(0, ValueError), (-1, ValueError),
                                            (1.0, TypeError), (True, TypeError)])
def test_bad_attempt_numbers_are_refused(attempt, error):
    with pytest.raises(error, match="attempt"):
        RetryPolicy().delay(attempt)


def test_error_classes_are_distinct_exceptions():
    assert issubclass(PermanentError, Exception) and issubclass(RetryableError, Exception)
    assert not issubclass(PermanentError, RetryableError)
    assert not issubclass(RetryableError, PermanentError)
