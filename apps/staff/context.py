"""What every staff page shows besides its own content: its badges (who waits for a person, for you, for a decision, for an approval)."""

from __future__ import annotations

from functools import cache

from django.http import HttpRequest


def waiting(request: HttpRequest) -> dict:
    """
    `staff_waiting`, `staff_unanswered`, `staff_quarantined` and `staff_approvals`: the navigation's counts, each read
    only when a page shows it (callables are called lazily, once per request); `staff_total`, their sum for the title.
    """
    user = getattr(request, "user", None)
    if not request.path.startswith("/staff/") or user is None or not user.is_authenticated or not user.is_staff:
        return {}
    from apps.staff.actions import panel_context, staff_identity
    from apps.staff.approvals import approvals_count
    from apps.staff.queries.queues import quarantine_count, unanswered_count, waiting_count

    me = staff_identity(user)
    presence = cache(lambda: my_presence(me))
    counts = {"staff_waiting": cache(waiting_count), "staff_unanswered": cache(lambda: unanswered_count(me)),
              "staff_quarantined": cache(quarantine_count), "staff_approvals": cache(approvals_count)}
    return {**counts, "staff_total": lambda: sum(count() for count in counts.values()), **panel_context(user),
            "staff_presence": presence, "staff_display_name": cache(lambda: display_name(user))}


def my_presence(me: str) -> dict[str, str]:
    """
    How colleagues see this member: `status` (online, away), `why` (online, away-chosen, away-idle)
    and the words. The page asking is itself there: before its presence socket is counted, online.
    """
    from django.utils import timezone

    from apps.people import presence

    profile = presence.profile(me)
    if profile is not None and profile.away:  # chosen: the sockets need not be read
        return {"status": "away", "why": "away-chosen", "label": "Away"}
    if presence.status(me, timezone.now()) == "away":
        return {"status": "away", "why": "away-idle", "label": "Away (idle)"}
    return {"status": "online", "why": "online", "label": "Online"}


def display_name(user) -> str:
    """The name the navigation shows: the one customers see, or the login until one is set."""
    from apps.staff.actions import DEFAULT_NAME, staff_name

    name = staff_name(user)
    return f"{user.get_username()} · set your name" if name == DEFAULT_NAME else name
