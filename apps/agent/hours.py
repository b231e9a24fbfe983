"""
Office hours: when the team answers (an assistant's `handoff.hours`).

```json
"hours": {"time_zone": "Europe/London",
          "weekly": {"mon": ["09:00-17:30"], "tue": ["09:00-12:00", "13:00-17:30"], "sat": []},
          "closed": ["2026-12-25"]}
```

A day missing from `weekly` is closed, and so is each date of `closed` (in the schedule's time
zone). An assistant without `hours` is always within them. Pure functions of the schedule and an
aware `now`, so the tests fix the clock on both sides of a boundary.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SPAN = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-(([01]\d|2[0-3]):([0-5]\d)|24:00)$")
MAX_CLOSED = 400
LOOKAHEAD_DAYS = 400  # a year of closed dates and one more week


def check_hours(hours: Any, problems: list[str]) -> dict[str, Any] | None:
    """The `handoff.hours` block, normalised; appends what is wrong to `problems`."""
    if hours is None:
        return None
    if not isinstance(hours, dict):
        problems.append("handoff.hours: must be an object with time_zone, weekly and closed")
        return None
    unknown = set(hours) - {"time_zone", "weekly", "closed"}
    if unknown:
        problems.append(f"handoff.hours: unknown keys {sorted(unknown)}")
    zone = hours.get("time_zone")
    if not isinstance(zone, str) or not _zone(zone):
        problems.append("handoff.hours.time_zone: must be an IANA time zone such as Europe/London")
    weekly = hours.get("weekly")
    if not isinstance(weekly, dict) or set(weekly) - set(DAYS):
        problems.append(f"handoff.hours.weekly: must be an object whose keys are days ({', '.join(DAYS)})")
        weekly = {}
    for day, spans in weekly.items():
        if not isinstance(spans, list) or not all(isinstance(s, str) and _SPAN.match(s) for s in spans):
            problems.append(f"handoff.hours.weekly.{day}: must be a list of spans like \"09:00-17:30\"")
        elif any(start >= end for start, end in map(_span, spans)):
            problems.append(f"handoff.hours.weekly.{day}: each span must end after it starts")
    closed = hours.get("closed", [])
    if not isinstance(closed, list) or len(closed) > MAX_CLOSED or not all(isinstance(d, str) and _date(d) for d in closed):
        problems.append(f"handoff.hours.closed: must be a list of at most {MAX_CLOSED} dates like \"2026-12-25\"")
        closed = []
    return {"time_zone": zone, "weekly": {day: list(weekly.get(day, [])) for day in DAYS if weekly.get(day)},
            "closed": sorted(set(closed))}


def within(hours: dict[str, Any] | None, now: datetime) -> bool:
    """Whether `now` is within the schedule (always, without one)."""
    if not hours:
        return True
    local = now.astimezone(ZoneInfo(hours["time_zone"]))
    return any(start <= local < end for start, end in _opening(hours, local.date()))


def next_opening(hours: dict[str, Any] | None, now: datetime) -> datetime | None:
    """When the team is next within hours after `now` (now itself while within them); None if never, within a year."""
    if not hours:
        return now
    local = now.astimezone(ZoneInfo(hours["time_zone"]))
    for offset in range(LOOKAHEAD_DAYS):
        for start, end in _opening(hours, local.date() + timedelta(days=offset)):
            if end > local:
                return max(start, local)
    return None


def describe(at: datetime, hours: dict[str, Any], now: datetime) -> str:
    """When the team is back, in words a customer reads: "today at 09:00", "Monday at 09:00", "on 2 January at 09:00" (their time zone named)."""
    zone = ZoneInfo(hours["time_zone"])
    local, today = at.astimezone(zone), now.astimezone(zone).date()
    clock = local.strftime("%H:%M")
    days = (local.date() - today).days
    if days == 0:
        when = f"today at {clock}"
    elif days == 1:
        when = f"tomorrow at {clock}"
    elif days < 7:
        when = f"{local.strftime('%A')} at {clock}"
    else:
        when = f"on {local.day} {local.strftime('%B')} at {clock}"
    return f"{when} ({hours['time_zone'].replace('_', ' ')} time)"


def _opening(hours: dict[str, Any], day: date) -> list[tuple[datetime, datetime]]:
    """The day's spans as aware datetimes (a 24:00 end is the next midnight; a DST gap shifts as zoneinfo does)."""
    if day.isoformat() in hours["closed"]:
        return []
    zone = ZoneInfo(hours["time_zone"])
    midnight = datetime.combine(day, time()).replace(tzinfo=zone)
    return sorted((midnight + start, midnight + end) for start, end in map(_span, hours["weekly"].get(DAYS[day.weekday()], [])))


def _span(text: str) -> tuple[timedelta, timedelta]:
    start, end = text.split("-")
    return _minutes(start), _minutes(end)


def _minutes(clock: str) -> timedelta:
    hours, minutes = clock.split(":")
    return timedelta(hours=int(hours), minutes=int(minutes))


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def _zone(name: str) -> bool:
    if name not in _zones():
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10
