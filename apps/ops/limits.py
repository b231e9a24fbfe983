"""
Rate limits: a fixed-window counter per client address and per credential, on Django's cache.

The HTTP API and the websocket consult the same buckets, so a client cannot get around a limit by
switching transport. With `REDIS_URL` set the cache is Redis and the counts are shared by every
server process; otherwise each process counts on its own.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from apps.conversations.errors import WaypointError

log = logging.getLogger(__name__)


class RateLimited(WaypointError):
    """Too many requests; retry after the number of seconds in Retry-After."""

    code = "rate_limited"
    status = 429


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int
    retry_after: int


def hit(*, bucket: str, limit: int, window: int, now: float) -> Verdict:
    """
    Count one request against `bucket` in the current fixed window and judge it.

    A limit of 0 or less disables the bucket. When the cache cannot be reached the request is
    allowed: a limiter outage must not take the service down with it.
    """
    slot = int(now // window)
    retry_after = max(1, math.ceil((slot + 1) * window - now))
    if limit <= 0:
        return Verdict(True, 0, retry_after)
    key = f"rl:{bucket}:{slot}"
    try:
        if cache.add(key, 1, timeout=window + 1):
            count = 1
        else:
            try:
                count = cache.incr(key)
            except ValueError:  # the window's key expired between add and incr
                cache.add(key, 1, timeout=window + 1)
                count = 1
    except Exception:  # noqa: BLE001 - see the docstring
        log.warning("rate limiter cache unavailable; allowing the request", exc_info=True)
        return Verdict(True, 0, retry_after)
    return Verdict(count <= limit, count, retry_after)


def _enforce(bucket: str, limit: int, now: float) -> None:
    verdict = hit(bucket=bucket, limit=limit, window=settings.WAYPOINT_RATE_LIMIT_WINDOW_SECONDS, now=now)
    if not verdict.allowed:
        raise RateLimited(
            f"Too many requests; retry in {verdict.retry_after} seconds.", retry_after=verdict.retry_after
        )


def check_address(*, address: str, now: float) -> None:
    """
    Count a request from a client address.

    :raises RateLimited: the address is over `WAYPOINT_RATE_LIMIT_PER_IP` in this window
    """
    _enforce(f"ip:{address or 'unknown'}", settings.WAYPOINT_RATE_LIMIT_PER_IP, now)


def check_credential(*, credential: str, now: float) -> None:
    """
    Count a request made with one API key or conversation token.

    :raises RateLimited: the credential is over `WAYPOINT_RATE_LIMIT_PER_CREDENTIAL` in this window
    """
    _enforce(f"cred:{credential}", settings.WAYPOINT_RATE_LIMIT_PER_CREDENTIAL, now)
