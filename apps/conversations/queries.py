"""Reads of one conversation row: by id, and its log head (the state itself is apps.agent.state)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from apps.conversations.models import Conversation
from apps.ledger import sql, store

# The row's columns that `control` is made of.
CONTROL_FIELDS = ("control_mode", "control_staff", "control_name", "control_requested_at", "control_since",
                  "control_reason", "created_at")


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


def control(row: Mapping[str, Any]) -> dict[str, Any]:
    """
    The `control` every state shows (PRODUCT.md "Human handoff"), from a conversation row's `CONTROL_FIELDS`.

    A time may be a datetime (read from the row) or the log's ISO text (a projection's change not
    yet written), so a webhook made in the append's transaction says what the state will.
    """
    staff = {"id": row["control_staff"], "name": row["control_name"] or row["control_staff"]} if row["control_staff"] else None
    return {
        "mode": row["control_mode"] or "agent",
        "staff": staff,
        "requested_at": _when(row["control_requested_at"]),
        "since": _when(row["control_since"] or row["created_at"]),
        "reason": row["control_reason"] or None,
    }


def _when(value: datetime | str | None) -> str | None:
    if not value:
        return None
    return value if isinstance(value, str) else store.iso(value)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True
