"""Reads of who is in a conversation and what each persona may do there."""

from __future__ import annotations

from typing import Any

from apps.conversations.models import Conversation
from apps.ledger.identities import PERMISSIONS
from apps.ledger.store import iso
from apps.people.models import Participant


def participants(conversation: Conversation) -> list[dict[str, Any]]:
    """Return the owner and the active participants of a conversation, owner first."""
    out: list[dict[str, Any]] = []
    if conversation.owner:
        out.append({"persona": conversation.owner, "role": "owner", "permissions": list(PERMISSIONS),
                    "added_by": "", "added_at": iso(conversation.created_at)})
    if conversation.visibility != "shared":
        return out  # a private conversation has no participant rows
    for row in Participant.objects.filter(conversation_id=conversation.id, status="active").order_by("added_at", "id"):
        if row.persona != conversation.owner:
            out.append({"persona": row.persona, "role": "participant", "permissions": list(row.permissions),
                        "added_by": row.added_by, "added_at": iso(row.added_at)})
    return out


def permissions_of(conversation: Conversation, persona: str) -> frozenset[str]:
    """
    Return what a persona may do in a conversation; empty when it is not admitted.

    A private conversation admits only its owner; a shared one also its active participants.
    """
    if persona and persona == conversation.owner:
        return frozenset(PERMISSIONS)
    if conversation.visibility != "shared":
        return frozenset()
    row = Participant.objects.filter(conversation_id=conversation.id, persona=persona, status="active").first()
    return frozenset(row.permissions) if row else frozenset()


def admits(conversation: Conversation, persona: str) -> bool:
    """Whether a persona may see a conversation at all (owner, or a participant of a shared one)."""
    return "view" in permissions_of(conversation, persona)
