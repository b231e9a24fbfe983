"""
Honest outages: while the database cannot be reached, a request gets 503 with Retry-After and a
page meant for people (or the API's error shape), never a 500 or Django's technical page.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.shortcuts import render

from apps.conversations.errors import ServiceUnavailable

log = logging.getLogger(__name__)

# What a lost or refused database connection raises (psycopg's errors come wrapped as these).
OUTAGE = (OperationalError, InterfaceError)


class OutageMiddleware:
    """Answer a page whose database went away with the 503 page; the API does the same in its own shape."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, OUTAGE):
            return None
        return unavailable(request)


def unavailable(request):
    """The 503 page, with Retry-After, for a request whose database went away."""
    log.warning("the database is unreachable: %s %s answered 503", request.method, request.path, exc_info=True)
    response = render(request, "503.html", status=503)
    response["Retry-After"] = str(ServiceUnavailable.retry_after)
    return response
