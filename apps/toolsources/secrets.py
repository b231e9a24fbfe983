"""
A tool source's header values, encrypted at rest (Fernet) with a key from settings.

`WAYPOINT_TOOL_SOURCES_KEY` (a Fernet key) when set, else one derived from `SECRET_KEY`: rotating
either makes stored headers unreadable, and a source then needs its headers again.
"""

from __future__ import annotations

import base64
import json

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


class UnreadableHeaders(Exception):
    """The headers were encrypted with another key than this deployment's."""


def _fernet() -> Fernet:
    given = getattr(settings, "WAYPOINT_TOOL_SOURCES_KEY", "")
    if given:
        return Fernet(given.encode())
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"waypoint tool source headers").derive(
        settings.SECRET_KEY.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def seal(headers: dict[str, str]) -> str:
    return _fernet().encrypt(json.dumps(headers, sort_keys=True).encode()).decode() if headers else ""


def unseal(sealed: str) -> dict[str, str]:
    if not sealed:
        return {}
    try:
        return json.loads(_fernet().decrypt(sealed.encode()))
    except InvalidToken as exc:
        raise UnreadableHeaders("the source's headers were stored under another key; add the source again with them") from exc
