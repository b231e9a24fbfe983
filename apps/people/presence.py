"""
Staff presence: who of the team is at the panel now (issue "the staff inbox", docs/staff.md "Presence").

A member is **online** while a panel page of theirs has a live socket that was seen within
SEEN_WITHIN (the page says so every HEARTBEAT_SECONDS), **away** when they said so (the panel's
Away toggle) or no page of theirs saw a key, a click or a scroll for AWAY_AFTER, and **offline**
otherwise. Rows are per socket, so a second tab closing leaves the first one's member online,
and a process killed with its sockets stops counting once they are no longer seen.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Max

from apps.people.models import StaffPresence, StaffProfile

HEARTBEAT_SECONDS = 20
SEEN_WITHIN = timedelta(seconds=3 * HEARTBEAT_SECONDS)
AWAY_AFTER = timedelta(minutes=5)
FORGET_AFTER = timedelta(hours=1)


def seen(channel: str, staff: str, *, active: bool, now: datetime) -> None:
    """A page's socket is alive (`active`: and its person did something there since it last said so)."""
    updated = StaffPresence.objects.filter(channel=channel).update(
        seen_at=now, **({"active_at": now} if active else {}))
    if not updated:
        StaffPresence.objects.filter(seen_at__lt=now - FORGET_AFTER).delete()  # sockets of processes that died
        StaffPresence.objects.update_or_create(channel=channel, defaults={"staff": staff, "seen_at": now, "active_at": now})


def gone(channel: str) -> None:
    """A page's socket closed."""
    StaffPresence.objects.filter(channel=channel).delete()


def statuses(now: datetime) -> dict[str, str]:
    """Each member with a live page, `online` or `away`; a member not in it is offline."""
    live = (StaffPresence.objects.filter(seen_at__gte=now - SEEN_WITHIN).values("staff")
            .annotate(active_at=Max("active_at")))
    away = set(StaffProfile.objects.filter(away=True).values_list("staff", flat=True))
    return {row["staff"]: "away" if row["staff"] in away or row["active_at"] < now - AWAY_AFTER else "online"
            for row in live}


def status(staff: str, now: datetime) -> str:
    """`online`, `away` or `offline`."""
    return statuses(now).get(staff, "offline")


def anyone_online(now: datetime) -> bool:
    """Whether a member of the team is online now (not away): a customer asking for a person may be promised one."""
    return "online" in statuses(now).values()


def set_away(staff: str, away: bool, *, now: datetime) -> None:
    """The panel's Away toggle: away until they say they are back, whatever their pages do."""
    StaffProfile.objects.update_or_create(staff=staff, defaults={"away": away, "updated_at": now})


def set_display_name(staff: str, name: str, *, now: datetime) -> None:
    """The name customers see for this member (empty: the panel's default)."""
    StaffProfile.objects.update_or_create(staff=staff, defaults={"display_name": name, "updated_at": now})


def display_names(staff: list[str]) -> dict[str, str]:
    """The display names the members set, by persona (members without one are not in it)."""
    return dict(StaffProfile.objects.filter(staff__in=staff).exclude(display_name="").values_list("staff", "display_name"))


def profile(staff: str) -> StaffProfile | None:
    return StaffProfile.objects.filter(staff=staff).first()
