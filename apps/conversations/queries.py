"""Reads of one conversation row: by id, and its log head (the state itself is apps.agent.state)."""

from __future__ import annotations

import uuid

from apps.conversations.models import Conversation
from apps.ledger import sql


def conversation_for(conversation_id: str, *, with_assistant: bool = True) -> Conversation | None:
    """
    Return a conversation by id, or None for an unknown or malformed id.

    `with_assistant=False` leaves the assistant (and its configuration) unread until it is used.
    """
    if not _is_uuid(conversation_id):
        return None
    # Named statements rather than the ORM's join: every push and page load asks.
    return sql.instance(Conversation, conversation_id, related="assistant" if with_assistant else "")


def conversation_head(conversation_id: str) -> int | None:
    """
    Return the log head (`head_seq`) of a conversation, or None for an unknown or malformed id.

    One indexed read of one column: the state is a projection of the log, so an unchanged head
    answers a conditional read without building the state.
    """
    if not _is_uuid(conversation_id):
        return None
    # Plain SQL: pollers ask this every few seconds, and building the ORM query costs several times
    # what PostgreSQL spends reading one column by primary key.
    conversations = sql.table(Conversation)
    found = sql.rows(f"SELECT head_seq FROM {conversations.name} WHERE id = %s", [conversations.value("id", conversation_id)])
    return found[0][0] if found else None


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
