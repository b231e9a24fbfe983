"""What every staff page shows besides its own content: its badges (who waits for a person, for you, for a decision)."""

from __future__ import annotations

from functools import cache

from django.http import HttpRequest


def waiting(request: HttpRequest) -> dict:
    """
    `staff_waiting`, `staff_unanswered` and `staff_quarantined`: the navigation's counts, each read
    only when a page shows it (callables are called lazily, once per request); `staff_total`, their sum for the title.
    """
    user = getattr(request, "user", None)
    if not request.path.startswith("/staff/") or user is None or not user.is_authenticated or not user.is_staff:
        return {}
    from apps.staff.actions import panel_context, staff_identity
    from apps.staff.queries import quarantine_count, unanswered_count, waiting_count

    me = staff_identity(user)
    counts = {"staff_waiting": cache(waiting_count), "staff_unanswered": cache(lambda: unanswered_count(me)),
              "staff_quarantined": cache(quarantine_count)}
    return {**counts, "staff_total": lambda: sum(count() for count in counts.values()), **panel_context(user)}
