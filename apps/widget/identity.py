"""
Visitor identity for the widget, vouched for by the embedding application's backend.

The token is a compact JWS (a JWT) with HS256, so any JWT library can make one:

    header  {"alg": "HS256", "typ": "JWT", "kid": "<the API key's first 10 characters>"}
    payload {"sub": "<your user id>", "exp": <unix seconds, at most 24 h ahead>}
    secret  the hex SHA-256 of the workspace API key (what Waypoint stores; the key itself never
            leaves your backend)

A valid token makes the visitor the persona `app:<sub>`; an invalid one is ignored (the visitor
stays an anonymous guest). See docs/widget.md.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from apps.ledger.identities import EXTERNAL_ID
from apps.workspaces.models import ApiKey

MAX_LIFETIME = timedelta(hours=24)
LEEWAY = timedelta(seconds=60)
_SUBJECT = re.compile(EXTERNAL_ID)  # an external id a persona accepts


class IdentityRejected(ValueError):
    """The identity token is malformed, forged, expired or signed by a revoked key."""


@dataclass(frozen=True)
class Identity:
    subject: str

    @property
    def persona(self) -> str:
        return f"app:{self.subject}"


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(secret: str, signing_input: str) -> bytes:
    return hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()


def sign_identity(*, api_key: str, subject: str, expires_at: datetime) -> str:
    """Make an identity token for `subject` with a raw API key (what a Python host backend runs)."""
    header = {"alg": "HS256", "typ": "JWT", "kid": api_key[:10]}
    payload = {"sub": subject, "exp": int(expires_at.timestamp())}
    signing_input = ".".join(_b64encode(json.dumps(part, separators=(",", ":")).encode()) for part in (header, payload))
    secret = hashlib.sha256(api_key.encode()).hexdigest()
    return f"{signing_input}.{_b64encode(_signature(secret, signing_input))}"


def check_identity(raw: str, *, now: datetime) -> Identity:
    """
    Verify an identity token and return who it names.

    Only HS256 is accepted (never `none` or another algorithm the header asks for).
    :raises IdentityRejected: malformed, bad signature, unknown or revoked key, expired, or too long-lived
    """
    parts = (raw or "").split(".")
    if len(parts) != 3 or len(raw) > 4096:
        raise IdentityRejected("not a compact JWS")
    try:
        header = json.loads(_b64decode(parts[0]))
        payload = json.loads(_b64decode(parts[1]))
        signature = _b64decode(parts[2])
    except (ValueError, UnicodeDecodeError) as exc:
        raise IdentityRejected("not a compact JWS") from exc
    if not isinstance(header, dict) or not isinstance(payload, dict) or header.get("alg") != "HS256":
        raise IdentityRejected("only HS256 tokens are accepted")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise IdentityRejected("the header needs kid, the API key's first 10 characters")
    signing_input = f"{parts[0]}.{parts[1]}"
    keys = ApiKey.objects.filter(prefix=kid, revoked_at__isnull=True).values_list("key_hash", flat=True)
    if not any(hmac.compare_digest(_signature(key_hash, signing_input), signature) for key_hash in keys):
        raise IdentityRejected("the signature does not match a live API key")
    exp = payload.get("exp")
    if not isinstance(exp, int) or isinstance(exp, bool):
        raise IdentityRejected("exp (unix seconds) is required")
    if exp <= (now - LEEWAY).timestamp():
        raise IdentityRejected("the token expired")
    if exp > (now + MAX_LIFETIME + LEEWAY).timestamp():
        raise IdentityRejected("the token lives longer than 24 hours")
    subject = payload.get("sub")
    if not isinstance(subject, str) or not _SUBJECT.fullmatch(subject):
        raise IdentityRejected("sub must be 1-100 letters, digits or . _ @ + -")
    return Identity(subject=subject)
