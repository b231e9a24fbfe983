"""Conversation tokens: a signed, revocable grant of one persona's access to one conversation."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.core import signing

from apps.conversations.models import ConversationToken
from apps.ledger import sql

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
        token_id = uuid.UUID(signing.loads(raw, salt=SALT)["t"])
    except (signing.BadSignature, KeyError, TypeError, ValueError, AttributeError):
        return None
    # Every request and poll of a customer resolves its token: one plain statement, no ORM.
    tokens = sql.table(ConversationToken)
    found = sql.rows(
        f"SELECT id, conversation_id, persona, edge, permissions FROM {tokens.name} WHERE id = %s AND revoked_at IS NULL",
        [tokens.value("id", token_id)],
    )
    if not found:
        return None
    [row] = found
    token, conversation, persona, edge, permissions = row
    permissions = json.loads(permissions) if isinstance(permissions, str) else permissions
    return Grant(str(uuid.UUID(str(token))), str(uuid.UUID(str(conversation))), persona, edge, frozenset(permissions))


def revoke(*, token_id: str, now: datetime) -> bool:
    """Revoke a token so that it no longer resolves; return whether it was live until now."""
    return ConversationToken.objects.filter(id=token_id, revoked_at__isnull=True).update(revoked_at=now) > 0
