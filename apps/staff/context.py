"""What every staff page shows besides its own content: how many customers wait for a person."""

from __future__ import annotations

from django.http import HttpRequest


def waiting(request: HttpRequest) -> dict:
    """`staff_waiting`: the count, read only when a staff page's navigation asks for it (callables are called lazily)."""
    user = getattr(request, "user", None)
    if not request.path.startswith("/staff/") or user is None or not user.is_authenticated or not user.is_staff:
        return {}
    from apps.staff.actions import panel_context
    from apps.staff.queries import waiting_count

    count: list[int] = []

    def staff_waiting() -> int:
        if not count:
            count.append(waiting_count())
        return count[0]

    return {"staff_waiting": staff_waiting, **panel_context(user)}
