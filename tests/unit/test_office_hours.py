"""Office hours (`handoff.hours`): within them or not, when they open next, in words; with a fixed clock on both sides of each boundary."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from apps.agent import hours
from apps.agent.config import ConfigError, check_config
from tests.conftest import SUPPORT_CONFIG

LONDON = ZoneInfo("Europe/London")
SCHEDULE = hours.check_hours({"time_zone": "Europe/London",
                              "weekly": {"mon": ["09:00-17:30"], "tue": ["09:00-12:00", "13:00-17:30"],
                                         "wed": ["09:00-17:30"], "thu": ["09:00-17:30"], "fri": ["09:00-17:00"]},
                              "closed": ["2026-12-25"]}, [])


def at(text: str) -> datetime:
    """A London wall-clock time."""
    return datetime.fromisoformat(text).replace(tzinfo=LONDON)


@pytest.mark.parametrize(("now", "inside"), [
    ("2026-12-07 08:59:59", False),  # Monday, a second before opening
    ("2026-12-07 09:00:00", True),
    ("2026-12-07 17:29:59", True),
    ("2026-12-07 17:30:00", False),
    ("2026-12-08 12:30:00", False),  # Tuesday's lunch
    ("2026-12-08 13:00:00", True),
    ("2026-12-11 16:59:00", True),  # Friday closes earlier
    ("2026-12-11 17:00:00", False),
    ("2026-12-12 11:00:00", False),  # Saturday is not in the schedule
    ("2026-12-25 11:00:00", False),  # a closed date on a Friday
])
def test_within_hours_on_both_sides_of_each_boundary(now, inside):
    assert hours.within(SCHEDULE, at(now)) is inside


def test_the_schedule_is_read_in_its_own_time_zone_whatever_the_clock_says():
    # 08:30 in New York is 13:30 in London, within a Monday's hours there.
    assert hours.within(SCHEDULE, datetime(2026, 12, 7, 8, 30, tzinfo=ZoneInfo("America/New_York")))
    assert not hours.within(SCHEDULE, datetime(2026, 12, 7, 8, 30, tzinfo=UTC))  # 08:30 in London in December


def test_the_next_opening_skips_the_weekend_and_closed_dates():
    assert hours.next_opening(SCHEDULE, at("2026-12-11 18:00")) == at("2026-12-14 09:00")  # Friday evening → Monday
    assert hours.next_opening(SCHEDULE, at("2026-12-24 18:00")) == at("2026-12-28 09:00")  # Christmas Eve → after the 25th
    assert hours.next_opening(SCHEDULE, at("2026-12-08 12:15")) == at("2026-12-08 13:00")  # after lunch
    assert hours.next_opening(SCHEDULE, at("2026-12-08 10:00")) == at("2026-12-08 10:00")  # open now


def test_summer_time_moves_the_opening_with_the_wall_clock():
    summer = hours.next_opening(SCHEDULE, at("2026-06-06 10:00"))  # a Saturday in June
    assert summer == at("2026-06-08 09:00") and summer.utcoffset().total_seconds() == 3600


def test_when_the_team_is_back_in_a_customers_words():
    friday_evening = at("2026-12-11 18:00")
    assert hours.describe(at("2026-12-14 09:00"), SCHEDULE, friday_evening) == "Monday at 09:00 (Europe/London time)"
    assert hours.describe(at("2026-12-08 13:00"), SCHEDULE, at("2026-12-08 12:15")) == "today at 13:00 (Europe/London time)"
    assert hours.describe(at("2026-12-09 09:00"), SCHEDULE, at("2026-12-08 18:00")) == "tomorrow at 09:00 (Europe/London time)"
    assert hours.describe(at("2027-01-04 09:00"), SCHEDULE, at("2026-12-24 18:00")) == "on 4 January at 09:00 (Europe/London time)"


def test_no_schedule_is_always_within_hours():
    assert hours.within(None, at("2026-12-12 03:00"))


@pytest.mark.parametrize(("bad", "problem"), [
    ({"time_zone": "Mars/Olympus", "weekly": {}}, "handoff.hours.time_zone"),
    ({"time_zone": "Europe/London", "weekly": {"monday": ["09:00-17:00"]}}, "handoff.hours.weekly: must be an object whose keys"),
    ({"time_zone": "Europe/London", "weekly": {"mon": ["9-5"]}}, "handoff.hours.weekly.mon: must be a list of spans"),
    ({"time_zone": "Europe/London", "weekly": {"mon": ["17:00-09:00"]}}, "handoff.hours.weekly.mon: each span must end after"),
    ({"time_zone": "Europe/London", "weekly": {}, "closed": ["25/12/2026"]}, "handoff.hours.closed"),
    ({"time_zone": "Europe/London", "weekly": {}, "open": True}, "handoff.hours: unknown keys"),
])
def test_a_schedule_that_is_wrong_is_refused_in_words(bad, problem):
    with pytest.raises(ConfigError) as refused:
        check_config({**SUPPORT_CONFIG, "handoff": {"enabled": True, "hours": bad}})
    assert any(p.startswith(problem) for p in refused.value.problems), refused.value.problems


def test_a_valid_schedule_is_kept_with_every_day_it_names():
    config = check_config({**SUPPORT_CONFIG, "handoff": {"enabled": True, "hours": {
        "time_zone": "Europe/Paris", "weekly": {"mon": ["09:00-24:00"]}, "closed": ["2026-12-25", "2026-12-25"]}}})
    assert config["handoff"]["hours"] == {"time_zone": "Europe/Paris", "weekly": {"mon": ["09:00-24:00"]},
                                          "closed": ["2026-12-25"]}
