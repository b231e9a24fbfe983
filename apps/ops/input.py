"""
Form posts of the staff panel and the admin with control characters (NUL above all) are refused
before any view reads them: PostgreSQL refuses NUL in text and JSON, which would be a 500.

The customer pages check their fields themselves (`conversations.actions.check_clean`) and say
what is wrong on the conversation page; the JSON API's strict parser refuses NUL in any string.
"""

from __future__ import annotations

from django.shortcuts import render

from apps.conversations.actions import CONTROL_CHARACTERS

PANELS = ("/staff/", "/admin/")


class ControlCharacterMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.path.startswith(PANELS) and _has_control_characters(request):
            return render(request, "422.html", {"problem": "The form contained characters that cannot be saved (such as NUL). "
                                                            "Remove them and send it again."}, status=422)
        return self.get_response(request)


def _has_control_characters(request) -> bool:
    if not request.content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        return False
    return any(CONTROL_CHARACTERS.search(key) or any(CONTROL_CHARACTERS.search(v) for v in values)
               for key, values in request.POST.lists())
