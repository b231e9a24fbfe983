"""Conversation tokens: a signed, revocable grant of one persona's access to one conversation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core import signing

from apps.conversations.models import ConversationToken

SALT = "waypoint.conversation-token"
ALL_PERMISSIONS = ["view", "write", "answer_client_actions", "approve"]


@dataclass(frozen=True)
class Grant:
    token_id: str
    conversation_id: str
    persona: str
    edge: str
    permissions: frozenset[str]

    def allows(self, permission: str) -> bool:
        return permission in self.permissions


def issue(*, conversation_id: str, persona: str, edge: str = "link", permissions: list[str] | None = None) -> str:
    """Create a token for one persona on one conversation and return its signed text."""
    row = ConversationToken.objects.create(
        conversation_id=conversation_id, persona=persona, edge=edge, permissions=permissions or ALL_PERMISSIONS
    )
    return signing.dumps({"t": str(row.id)}, salt=SALT, compress=False)


def resolve(raw: str) -> Grant | None:
    """Return the grant a token carries, or None when it is forged, malformed or revoked."""
    try:
        token_id = signing.loads(raw, salt=SALT)["t"]
        row = ConversationToken.objects.get(id=token_id, revoked_at__isnull=True)
    except (signing.BadSignature, KeyError, TypeError, ValueError, ConversationToken.DoesNotExist):
        return None
    return Grant(str(row.id), str(row.conversation_id), row.persona, row.edge, frozenset(row.permissions))


def revoke(*, token_id: str, now: datetime) -> bool:
    """Revoke a token so that it no longer resolves; return whether it was live until now."""
    return ConversationToken.objects.filter(id=token_id, revoked_at__isnull=True).update(revoked_at=now) > 0
