"""Reads of the AG-UI edge: which conversation a thread names, and which of a client's messages the record has."""

from __future__ import annotations

import json

from apps.agent.models import Assistant
from apps.conversations.actions import is_uuid
from apps.conversations.errors import NotFound
from apps.conversations.models import ChatMessage, Conversation
from apps.ledger.models import Event
from apps.ledger.types import TurnDispatched, decode

EDGE = "ag-ui"


def assistant(assistant_id: str) -> Assistant:
    """:raises NotFound: no such assistant"""
    found = Assistant.objects.filter(id=assistant_id).first() if is_uuid(assistant_id) else None
    if found is None:
        raise NotFound("no such assistant")
    return found


def thread_conversation(thread_id: str, assistant: Assistant) -> Conversation | None:
    """
    The conversation a thread names: a conversation id, or a thread an earlier request started; None for a new thread.

    :raises NotFound: the conversation is another assistant's
    """
    conversation = None
    if is_uuid(thread_id):
        conversation = Conversation.objects.filter(id=thread_id).select_related("assistant").first()
    if conversation is None:
        conversation = Conversation.objects.filter(agui_thread__thread_id=thread_id).select_related("assistant").first()
    if conversation is not None and conversation.assistant_id != assistant.id:
        raise NotFound("this thread is a conversation of another assistant")
    return conversation


def client_message_ids(conversation_id: str) -> dict[str, str]:
    """The id an AG-UI client gave each user message it sent, by the turn it started (the turn's idempotency key)."""
    out = {}
    for turn_id, payload in Event.objects.filter(conversation_id=conversation_id, kind=TurnDispatched.kind).values_list(
        "turn_id", "payload"
    ):
        body = decode(TurnDispatched.kind, json.loads(payload))
        if body.edge == EDGE and body.idempotency_key:
            out[turn_id] = body.idempotency_key
    return out


def recorded_message_ids(conversation_id: str) -> set[str]:
    """Every message id a client may send back for a message the record already has."""
    ids = set(client_message_ids(conversation_id).values())
    ids.update(ChatMessage.objects.filter(conversation_id=conversation_id).values_list("id", flat=True))
    return ids
