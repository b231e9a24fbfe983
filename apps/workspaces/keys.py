"""Workspace API keys: created once, stored as a hash, revocable."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from apps.workspaces.models import ApiKey


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def create_api_key(*, name: str) -> tuple[ApiKey, str]:
    """Create a key and return it with its secret text, which is never stored."""
    raw = "wp_" + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(name=name, prefix=raw[:10], key_hash=_digest(raw))
    return key, raw


def resolve_api_key(raw: str) -> ApiKey | None:
    """Return the live key for a secret, or None."""
    return ApiKey.objects.filter(key_hash=_digest(raw), revoked_at__isnull=True).first()


def revoke_api_key(*, key: ApiKey) -> None:
    key.revoked_at = timezone.now()
    key.save(update_fields=["revoked_at"])
