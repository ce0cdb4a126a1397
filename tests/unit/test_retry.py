"""cachequeue.retry: the backoff formula, its documented schedule, jitter bounds, validation."""

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


def test_docstring_schedule_is_what_the_code_computes():
    doc = RetryPolicy.__doc__
    header = re.search(r"Worked schedule for RetryPolicy\((.*?)\):", doc)
    kwargs = dict(part.split("=") for part in header.group(1).replace(" ", "").split(","))
    policy = RetryPolicy(max_attempts=int(kwargs["max_attempts"]), base=float(kwargs["base"]),
                         cap=float(kwargs["cap"]))
    attempts_line = re.search(r"failed attempt n\s*\|(.*)", doc).group(1)
    ceilings_line = re.search(r"ceiling\(n\) in s\s*\|(.*)", doc).group(1)
    attempts = [int(x) for x in attempts_line.split("|")]
    ceilings = [float(x) for x in ceilings_line.split("|")]
    assert attempts == list(range(1, policy.max_attempts))
    assert ceilings == policy.schedule() == [policy.ceiling(n) for n in attempts]


def test_full_jitter_stays_within_zero_and_the_ceiling_and_spreads():
    policy = RetryPolicy(base=1.0, cap=60.0)
    rng = random.Random(42)
    for attempt in (1, 3, 6, 9):
        draws = [policy.delay(attempt, rng) for _ in range(500)]
        ceiling = policy.ceiling(attempt)
        assert all(0.0 <= d <= ceiling for d in draws)
        # Full jitter spreads over the whole range, not a band near the ceiling.
        assert min(draws) < 0.1 * ceiling and max(draws) > 0.9 * ceiling


def test_jitter_is_reproducible_with_a_seeded_rng():
    policy = RetryPolicy()
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
