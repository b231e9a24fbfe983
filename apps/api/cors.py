"""
Cross-origin access to the API for the JavaScript SDK on the embedding application's own site.

The API trusts only bearer credentials and never reads cookies, so any origin may call it: a
page can do nothing with it that its holder of the key or token could not do anyway. Responses
therefore carry `Access-Control-Allow-Origin: *` (never with credentials), and preflight requests
are answered here.
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse

HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "ETag, Retry-After",
}
PREFLIGHT = {
    **HEADERS,
    "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key, If-None-Match",
    "Access-Control-Max-Age": "600",
}


def with_cors(view):
    """Answer CORS preflights and mark every response of `view` as readable from any origin."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            response = HttpResponse(status=204)
            for name, value in PREFLIGHT.items():
                response[name] = value
            return response
        response = view(request, *args, **kwargs)
        for name, value in HEADERS.items():
            response[name] = value
        return response

    return wrapped
