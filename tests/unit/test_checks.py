"""The one rule of cachequeue.checks: TypeError for a wrong type, ValueError for a bad value,
always (value, name), the name and the value in the message."""

import math
import uuid
from fractions import Fraction

import pytest

from cachequeue import checks

WRONG_TYPE = [
    (checks.check_int, (1.5, "n"), {}),
    (checks.check_int, (True, "n"), {}),
    (checks.check_int, ("3", "n"), {}),
    (checks.check_finite, (None, "x"), {}),
    (checks.check_finite, (False, "x"), {}),
    (checks.check_seconds, ("5", "ttl"), {}),
    (checks.check_seconds, (True, "ttl"), {}),
    (checks.check_seconds, (None, "ttl"), {}),
    (checks.check_text, (5, "kind"), {}),
    (checks.check_text, (None, "kind"), {}),
    (checks.check_text, (b"kind", "kind"), {}),
    (checks.check_bool, (1, "flag"), {}),
    (checks.check_bool, (None, "flag"), {}),
    (checks.check_callable, (42, "loader"), {}),
    (checks.check_instance, ("x", "token", uuid.UUID), {}),
]

BAD_VALUE = [
    (checks.check_int, (0, "n"), {"minimum": 1}),
    (checks.check_int, (11, "n"), {"maximum": 10}),
    (checks.check_finite, (math.nan, "x"), {}),
    (checks.check_finite, (math.inf, "x"), {}),
    (checks.check_seconds, (0, "ttl"), {}),
    (checks.check_seconds, (-1, "ttl"), {"allow_zero": True}),
    (checks.check_seconds, (math.nan, "ttl"), {}),
    (checks.check_seconds, (math.inf, "ttl"), {}),
    (checks.check_seconds, (10**400, "ttl"), {}),
    (checks.check_seconds, (61, "ttl"), {"upper": 60.0}),
    (checks.check_text, ("", "kind"), {}),
    (checks.check_text, ("   ", "kind"), {}),
    (checks.check_text, ("abcd", "kind"), {"limit": 3}),
    (checks.check_choice, ("random", "policy", ("fifo", "lru")), {}),
    (checks.check_choice, ([], "policy", {"fifo", "lru"}), {}),
]


@pytest.mark.parametrize(("check", "args", "kw"), WRONG_TYPE)
def test_a_wrong_type_is_a_type_error_naming_the_argument(check, args, kw):
    with pytest.raises(TypeError, match=f"^{args[1]} must be "):
        check(*args, **kw)


@pytest.mark.parametrize(("check", "args", "kw"), BAD_VALUE)
def test_a_bad_value_is_a_value_error_naming_the_argument(check, args, kw):
    with pytest.raises(ValueError, match=f"^{args[1]} must "):
        check(*args, **kw)


def test_good_values_come_back_in_the_form_to_use():
    assert checks.check_int(3, "n", minimum=1, maximum=3) == 3
    assert checks.check_finite(-2, "x") == -2.0
    assert checks.check_seconds(Fraction(1, 4), "ttl") == 0.25
    assert type(checks.check_seconds(2, "ttl")) is float
    assert checks.check_seconds(0, "delay", allow_zero=True) == 0.0
    assert checks.check_seconds(60, "ttl", upper=60.0) == 60.0
    assert checks.check_text(None, "key", optional=True) is None
    assert checks.check_text(" a ", "key") == " a "
    assert checks.check_bool(False, "flag") is False
    assert checks.check_choice("lru", "policy", ("fifo", "lru")) == "lru"
    assert checks.check_callable(print, "f") is print
    token = uuid.uuid4()
    assert checks.check_instance(token, "token", (uuid.UUID, str)) is token


def test_messages_show_the_bound_and_what_was_given():
    with pytest.raises(ValueError) as info:
        checks.check_seconds(120, "negative_ttl", upper=60.0, upper_name="max_ttl")
    assert str(info.value) == "negative_ttl must be > 0 and <= max_ttl (60) seconds, got 120"
    with pytest.raises(TypeError) as info:
        checks.check_seconds(True, "ttl")
    assert str(info.value) == "ttl must be a number of seconds, got bool True"
    with pytest.raises(TypeError) as info:
        checks.check_instance("x", "token", uuid.UUID)
    assert str(info.value) == "token must be a uuid.UUID, got str"
