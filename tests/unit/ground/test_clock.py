import math
from datetime import UTC, datetime

import pytest

from cachequeue.clock import EPOCH, ManualClock


def test_starts_where_told_and_only_moves_forward():
    clock = ManualClock(5)
    assert clock() == 5.0
    assert clock.advance(2.5) == 7.5
    assert clock() == clock.now == 7.5
    with pytest.raises(ValueError, match="cannot go back"):
        clock.advance(-1)
    assert clock() == 7.5


@pytest.mark.parametrize(("bad", "error"), [
    (math.nan, ValueError), (math.inf, ValueError),
    (True, TypeError), ("1", TypeError), (None, TypeError)])
def test_rejects_non_finite_or_non_numbers(bad, error):
    with pytest.raises(error):
        ManualClock(bad)
    with pytest.raises(error):
        ManualClock().advance(bad)


def test_datetime_maps_onto_the_epoch():
    clock = ManualClock()
    clock.advance(90)
    assert clock.datetime() == datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    assert ManualClock().datetime() == EPOCH
