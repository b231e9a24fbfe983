"""
Writes that decide who is in a conversation: participants of shared conversations and their tokens.

A conversation starts private (its owner only). Adding a participant makes it shared; each
participant gets its own conversation token (a customer link or widget token), limited to the
permissions it was admitted with. Every change is a signed log entry.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from apps.conversations import broadcast, tokens
from apps.conversations.actions import locked
from apps.conversations.errors import BadInput, ConversationIsCompleted, Forbidden, NotFound
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.ledger.identities import PERMISSIONS, InvalidPersona, check_permissions, parse_persona
from apps.ledger.types import ParticipantAdded, ParticipantRemoved, ParticipantTokenIssued
from apps.people.models import Participant
from apps.people.queries import permissions_of

EDGES = ("link", "widget", "api", "staff")


def check_persona(value: Any, *, what: str = "persona") -> str:
    """:raises BadInput: not `provider:external_id` or `provider:scope:external_id`"""
    try:
        return str(parse_persona(value))
    except InvalidPersona as exc:
        raise BadInput(f"{what}: {exc}") from exc


def _permissions(value: Any) -> list[str]:
    if value is None:
        return list(PERMISSIONS)
    try:
        return check_permissions(value)
    except ValueError as exc:
        raise BadInput(str(exc)) from exc


def _append(conversation: Conversation, events: list, actor: str, now: datetime) -> None:
    recorded = store.append(conversation, events, actor=actor, now=now)
    broadcast.on_commit(conversation.id, recorded[-1].seq)


def add_participant(
    *, conversation_id: str, persona: str, by: str, now: datetime, permissions: list[str] | None = None
) -> dict[str, Any]:
    """
    Admit a persona to a conversation, which makes it shared.

    Idempotent: admitting an active participant again with the same permissions records nothing;
    with other permissions it records the new ones.
    :raises BadInput: a malformed persona or permission, or the persona is the owner
    :raises NotFound: no such conversation
    :raises ConversationIsCompleted: the conversation is read-only
    """
    persona = check_persona(persona)
    by = check_persona(by, what="by")
    granted = _permissions(permissions)
    if "view" not in granted:
        raise BadInput("a participant needs at least the view permission")
    with transaction.atomic():
        conversation = locked(conversation_id)
        if conversation.status == "completed":
            raise ConversationIsCompleted()
        if persona == conversation.owner:
            raise BadInput("this persona owns the conversation already")
        row = Participant.objects.filter(conversation_id=conversation.id, persona=persona).first()
        if row is None or row.status != "active" or row.permissions != granted:
            event = ParticipantAdded(persona=persona, permissions=granted, added_by=by, again=row is not None)
            _append(conversation, [event], by, now)
    return {"persona": persona, "permissions": granted, "visibility": "shared"}


def remove_participant(*, conversation_id: str, persona: str, by: str, now: datetime) -> dict[str, Any]:
    """
    Remove a participant and revoke every token it holds for this conversation.

    :raises NotFound: no such conversation, or the persona is not an active participant
    """
    persona = check_persona(persona)
    by = check_persona(by, what="by")
    with transaction.atomic():
        conversation = locked(conversation_id)
        if not Participant.objects.filter(conversation_id=conversation.id, persona=persona, status="active").exists():
            raise NotFound("this persona is not a participant of the conversation")
        _append(conversation, [ParticipantRemoved(persona=persona, removed_by=by)], by, now)
        revoked = tokens.revoke_where(now=now, conversation_id=conversation.id, persona=persona)
    return {"persona": persona, "revoked_tokens": revoked}


def issue_participant_token(
    *, conversation_id: str, persona: str, by: str, now: datetime, edge: str = "link", permissions: list[str] | None = None
) -> dict[str, Any]:
    """
    Issue a conversation token (for a customer link or the widget) to the owner or a participant.

    The token carries at most the permissions the persona was admitted with; issuing it is logged.
    :raises Forbidden: the conversation is private and the persona is not its owner, the persona is
        not a participant, or it asks for more than it was admitted with
    :raises BadInput: a malformed persona, edge or permission
    """
    persona = check_persona(persona)
    by = check_persona(by, what="by")
    if edge not in EDGES:
        raise BadInput(f"edge must be one of {list(EDGES)}")
    with transaction.atomic():
        conversation = locked(conversation_id)
        allowed = permissions_of(conversation, persona)
        if not allowed:
            if conversation.visibility != "shared":
                raise Forbidden("this conversation is private: only its owner can have a token")
            raise Forbidden("this persona is not a participant of the conversation")
        granted = [p for p in PERMISSIONS if p in allowed] if permissions is None else _permissions(permissions)
        if "view" not in granted:
            raise BadInput("a token needs at least the view permission")
        if set(granted) - allowed:
            raise Forbidden(f"this persona may not be granted {sorted(set(granted) - allowed)}")
        raw = tokens.issue(conversation_id=str(conversation.id), persona=persona, edge=edge, permissions=granted)
        token_id = str(tokens.resolve(raw).token_id)
        event = ParticipantTokenIssued(persona=persona, token_id=token_id, edge=edge, permissions=granted, issued_by=by)
        _append(conversation, [event], by, now)
    return {"token": raw, "persona": persona, "permissions": granted, "edge": edge}
