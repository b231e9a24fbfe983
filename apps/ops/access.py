"""
The access log: one line per HTTP request, with the path and never the query string.

Conversation tokens travel in `?token=`, so Daphne's own access log (which writes the whole URI)
is turned off when the application loads, and this middleware writes the log instead.
"""

from __future__ import annotations

import logging
import time

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

log = logging.getLogger("waypoint.access")


def _line(request, status: int, started: float) -> None:
    log.info('%s "%s %s" %s %.0fms', request.META.get("REMOTE_ADDR", "-"), request.method, request.path, status,
             (time.monotonic() - started) * 1000)


class AccessLogMiddleware:
    """Log each request as `client "METHOD /path" status time`; the query string is left out."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self._acall(request)
        started = time.monotonic()
        response = self.get_response(request)
        _line(request, response.status_code, started)
        return response

    async def _acall(self, request):
        started = time.monotonic()
        response = await self.get_response(request)
        _line(request, response.status_code, started)
        return response


def silence_daphne_access_log() -> None:
    """Stop Daphne writing its access log, whose lines carry each request's query string (tokens)."""
    try:
        from daphne.access import AccessLogGenerator
    except ImportError:  # served by another ASGI server: it is that server's log to configure
        return
    AccessLogGenerator.__call__ = lambda self, protocol, action, details: None
