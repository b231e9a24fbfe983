"""
The `conversations` and `chat_messages` stores as a projection of the log (pure: no Django).

Registered in `ConversationsConfig.ready()`; see `apps/ledger/projection.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

from apps.ledger.projection import Change, Entry, Projection
from apps.ledger.types import (
    ConversationCompleted,
    ConversationStarted,
    ParticipantAdded,
    TurnComplete,
    TurnDispatched,
)

projection = Projection({"conversations": ("id",), "chat_messages": ("id",)})


def _message(at: Entry, *, message_id: str, role: str, text: str, author: str) -> Change:
    return Change(
        "chat_messages",
        (message_id,),
        create={
            "id": message_id, "turn_id": at.turn_id, "role": role, "text": text, "author": author,
            "seq": at.seq, "created_at": at.created_at,
        },
    )


@projection.handles(ConversationStarted)
def _(event: ConversationStarted, at: Entry) -> Iterator[Change]:
    yield Change(
        "conversations",
        (at.conversation_id,),
        create={
            "id": at.conversation_id,
            "assistant_id": event.assistant_id,
            "status": "active",
            "completed_at": None,
            "metadata": event.metadata,
            "message_count": 0,
            "visibility": event.visibility,
            "owner": event.owner,
            "last_turn_at": None,
            "created_at": at.created_at,
        },
    )


@projection.handles(TurnDispatched)
def _(event: TurnDispatched, at: Entry) -> Iterator[Change]:
    yield Change("conversations", (at.conversation_id,), set={"last_turn_at": at.created_at})
    if not event.continuation:
        yield _message(at, message_id=event.message_id, role="user", text=event.text, author=event.caller)
        yield Change("conversations", (at.conversation_id,), incr={"message_count": 1})


@projection.handles(TurnComplete)
def _(event: TurnComplete, at: Entry) -> Iterator[Change]:
    if event.text:
        yield _message(at, message_id=event.message_id, role="assistant", text=event.text, author="")
        yield Change("conversations", (at.conversation_id,), incr={"message_count": 1})


@projection.handles(ConversationCompleted)
def _(event: ConversationCompleted, at: Entry) -> Iterator[Change]:
    yield Change("conversations", (at.conversation_id,), set={"status": "completed", "completed_at": at.created_at})


@projection.handles(ParticipantAdded)
def _(event: ParticipantAdded, at: Entry) -> Iterator[Change]:
    yield Change("conversations", (at.conversation_id,), set={"visibility": "shared"})
