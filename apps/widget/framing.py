"""
Who may put the widget in an `<iframe>`, and where the widget may post messages.

Every route sends `X-Frame-Options: DENY` and `frame-ancestors 'none'` (settings). Widget routes
replace both with `frame-ancestors 'self' <the assistant's allowed_origins>`; the host origin the
embed script passes (`?host=`) is trusted for postMessage only when it is one of those origins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.csp import CSP, build_policy


def allowed_origins(config: dict) -> list[str]:
    """The origins an assistant may be embedded on, normalised (lower case, no trailing slash)."""
    return [o.rstrip("/").lower() for o in config.get("allowed_origins", []) if isinstance(o, str)]


def check_host_origin(raw: str, *, config: dict, own_origin: str) -> str:
    """Return `raw` when it is exactly an allowed origin of the assistant (or our own), else ""."""
    origin = (raw or "").strip().lower()
    if not origin:
        return ""
    if origin == own_origin.lower() or origin in allowed_origins(config):
        return origin
    return ""


def allow_framing(response: HttpResponse, *, config: dict) -> HttpResponse:
    """Let the assistant's allowed origins (and this site) frame this response, and nobody else."""
    policy = {**settings.SECURE_CSP, "frame-ancestors": [CSP.SELF, *allowed_origins(config)]}
    # A header the view sets itself is kept by ContentSecurityPolicyMiddleware; the per-response
    # policy has to be dynamic (one list per assistant), which the csp_override decorator is not.
    response.headers[CSP.HEADER_ENFORCE] = build_policy(policy)
    # frame-ancestors supersedes X-Frame-Options in browsers, which would otherwise refuse a DENY.
    response.xframe_options_exempt = True
    return response


@dataclass(frozen=True)
class Embed:
    """A page rendered inside the widget iframe: which assistant, and the host page's origin."""

    assistant_id: str
    host: str  # "" when unknown or not allowed: the page then posts no messages
    color: str = ""  # the launcher colour the host chose, "#rrggbb" or ""

    @property
    def query(self) -> str:
        return urlencode({"embed": "1", "host": self.host, "color": self.color})


def own_origin(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")


def make_embed(fields, *, assistant_id: str, config: dict, own_origin: str, always: bool = False) -> Embed | None:
    """The embedding described by `embed=1&host=…&color=…` fields, checked, or None when not embedded."""
    if fields.get("embed") != "1" and not always:
        return None
    host = check_host_origin(fields.get("host", ""), config=config, own_origin=own_origin)
    color = fields.get("color", "")
    return Embed(assistant_id=str(assistant_id), host=host, color=color if _COLOR.match(color) else "")


def embed_for(request: HttpRequest, *, assistant_id: str, config: dict, always: bool = False) -> Embed | None:
    """The embedding of this request (query string, or the same fields posted), or None."""
    data = request.POST if request.method == "POST" else request.GET
    return make_embed(data, assistant_id=assistant_id, config=config, own_origin=own_origin(request), always=always)
