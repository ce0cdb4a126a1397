"""Fire times, time zones, DST and the missed-fire windows of queue.schedules (no database).

The DST rule is cronsim's (Debian cron's); these tests pin what the module's docstring
says, on real transitions of Europe/Berlin in 2026 (spring forward 29 March 02:00 -> 03:00,
fall back 25 October 03:00 -> 02:00) and America/New_York (8 March, 1 November).
"""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cachequeue.queue import schedules
from cachequeue.queue.schedules import _latest, fire_times, window_end

BERLIN = ZoneInfo("Europe/Berlin")


def utc(*args):
    return datetime(*args, tzinfo=UTC)


def test_spring_forward_a_time_in_the_missing_hour_fires_once_right_after_the_jump():
    got = fire_times("30 2 * * *", "Europe/Berlin", utc(2026, 3, 27, 12), utc(2026, 3, 30, 12))
    local = [t.astimezone(BERLIN).isoformat() for t in got]
    assert local == ["2026-03-28T02:30:00+01:00",
                     "2026-03-29T03:00:00+02:00",  # 02:30 does not exist: 03:00, once
                     "2026-03-30T02:30:00+02:00"]
    assert got[1] == utc(2026, 3, 29, 1, 0)


def test_fall_back_a_time_in_the_repeated_hour_fires_once_at_its_first_occurrence():
    got = fire_times("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12), utc(2026, 10, 26, 12))
    assert [t.astimezone(BERLIN).isoformat() for t in got] == [
        "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]
    assert got[0] == utc(2026, 10, 25, 0, 30)  # the first 02:30, not the second (01:30 UTC)


def test_fall_back_in_new_york_0130_fires_once():
    got = fire_times("30 1 * * *", "America/New_York", utc(2026, 10, 31, 12), utc(2026, 11, 2, 12))
    assert got == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]  # EDT, then EST


def test_a_stepped_entry_fires_at_every_real_instant_across_both_transitions():
    fall = fire_times("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 24, 23, 10),
                      utc(2026, 10, 25, 2, 0))
    # 01:30, 02:00, 02:30 (CEST), 02:00, 02:30 (CET), 03:00: every half hour of real time
    assert [t - fall[0] for t in fall] == [timedelta(minutes=30 * i) for i in range(6)]
    spring = fire_times("*/30 * * * *", "Europe/Berlin", utc(2026, 3, 29, 0, 10),
                        utc(2026, 3, 29, 2, 0))
    assert spring == [utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30),
                      utc(2026, 3, 29, 2, 0)]  # 01:30 CET, then 03:00, 03:30, 04:00 CEST


def test_fire_times_are_after_the_start_and_up_to_the_end_inclusive():
    got = fire_times("0 * * * *", "UTC", utc(2026, 1, 1, 5), utc(2026, 1, 1, 7))
    assert got == [utc(2026, 1, 1, 6), utc(2026, 1, 1, 7)]
    assert fire_times("0 * * * *", "UTC", utc(2026, 1, 1, 5), utc(2026, 1, 1, 9), limit=2) == got


@pytest.mark.parametrize("catch_up, end", [(0, utc(2026, 1, 1, 6)), (2, utc(2026, 1, 1, 8))])
def test_a_fire_times_window_ends_at_the_catch_up_plus_first_fire_time_after_it(catch_up, end):
    assert window_end("0 * * * *", "UTC", utc(2026, 1, 1, 5), catch_up) == end


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("cron, zone, now", [
    ("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 25, 1, 15)),  # inside the repeated hour
    ("*/30 * * * *", "Europe/Berlin", utc(2026, 3, 29, 1, 15)),   # just after the jump
    ("30 2 * * *", "Europe/Berlin", utc(2026, 10, 26, 0, 0)),
    ("30 2 * * *", "Europe/Berlin", utc(2026, 3, 30, 0, 0)),
    ("0 * * * *", "UTC", utc(2026, 1, 1, 7, 0)),                   # a fire time equal to now
])
def test_the_latest_fire_times_agree_with_forward_iteration(cron, zone, now, count):
    after = now - timedelta(days=5)
    forward = fire_times(cron, zone, after, now, limit=100_000)
    assert _latest(cron, ZoneInfo(zone), now, after, count) == forward[-count:]


def test_the_latest_fire_times_never_reach_before_the_start():
    now, after = utc(2026, 1, 1, 7, 0), utc(2026, 1, 1, 5, 30)
    assert _latest("0 * * * *", ZoneInfo("UTC"), now, after, 5) == [utc(2026, 1, 1, 6),
                                                                   utc(2026, 1, 1, 7)]


@pytest.mark.parametrize("cron, message", [
    ("61 * * * *", "not a valid expression"),
    ("* * * *", "five fields"),
    ("* * * * * *", "five fields"),
    ("0 0 30 2 *", "Bad day-of-month"),  # no February has a 30th: cronsim refuses it
    ("", "non-empty"),
    ("* " * 150, "at most 200"),
])
def test_a_bad_cron_expression_is_a_clear_value_error(cron, message):
    with pytest.raises(ValueError, match=message):
        fire_times(cron, "UTC", utc(2026, 1, 1), utc(2026, 1, 2))


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "utc ", "x" * 65])
def test_a_bad_time_zone_is_a_clear_value_error(zone):
    with pytest.raises(ValueError, match="timezone"):
        fire_times("* * * * *", zone, utc(2026, 1, 1), utc(2026, 1, 2))


def test_naive_datetimes_and_wrong_types_are_refused():
    with pytest.raises(ValueError, match="aware"):
        fire_times("* * * * *", "UTC", datetime(2026, 1, 1), utc(2026, 1, 2))
    with pytest.raises(TypeError):
        fire_times("* * * * *", "UTC", "2026-01-01", utc(2026, 1, 2))
    with pytest.raises(TypeError):
        fire_times(5, "UTC", utc(2026, 1, 1), utc(2026, 1, 2))
    with pytest.raises(ValueError, match="catch_up"):
        window_end("* * * * *", "UTC", utc(2026, 1, 1), schedules.MAX_CATCH_UP + 1)


def test_enqueue_refuses_a_plan_it_did_not_make_before_touching_the_connection():
    with pytest.raises(TypeError, match="planned"):
        schedules.enqueue(None, {"now": 1}, scheduler="s")
