"""A request's credential checked again, for a response that outlives the check its request had."""

from __future__ import annotations

from django.http import HttpRequest

from apps.conversations import tokens
from apps.workspaces.keys import resolve_api_key


def still_valid(request: HttpRequest) -> bool:
    """
    Whether the API key or conversation token the request came with is still good (not revoked,
    not expired). No rate limit is counted: the request was counted once, when it came.
    """
    raw = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or request.GET.get("token", "")
    if raw.startswith("wp_"):
        return resolve_api_key(raw) is not None
    return bool(raw) and tokens.resolve(raw) is not None
