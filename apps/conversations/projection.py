"""
The `conversations` and `chat_messages` stores as a projection of the log (pure: no Django).

Registered in `ConversationsConfig.ready()`; see `apps/ledger/projection.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

from apps.ledger.projection import Change, Entry, Projection
from apps.ledger.types import (
    ControlReturned,
    ControlTaken,
    ConversationCompleted,
    ConversationStarted,
    CustomerMessage,
    HandoffCancelled,
    HandoffDetails,
    HandoffRequested,
    HandoffTimedOut,
    ParticipantAdded,
    StaffMessage,
    StaffNote,
    TurnComplete,
    TurnDispatched,
    TurnHandedOff,
)

projection = Projection({"conversations": ("id",), "chat_messages": ("id",), "control_changes": ("id",),
                         "staff_notes": ("id",)})


def _message(at: Entry, *, message_id: str, role: str, text: str, author: str, author_name: str = "",
             citations: list | None = None, offer_handoff: bool = False) -> Change:
    return Change(
        "chat_messages",
        (message_id,),
        create={
            "id": message_id, "turn_id": at.turn_id, "role": role, "text": text, "author": author,
            "author_name": author_name, "citations": citations or [], "offer_handoff": offer_handoff, "seq": at.seq,
            "created_at": at.created_at,
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
            "control_mode": "agent",
            "control_staff": "",
            "control_name": "",
            "control_requested_at": None,
            "control_since": None,
            "control_reason": "",
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
        yield _message(at, message_id=event.message_id, role="assistant", text=event.text, author="", citations=event.citations,
                       offer_handoff=event.offer_handoff)
        yield Change("conversations", (at.conversation_id,), incr={"message_count": 1})


@projection.handles(TurnHandedOff)
def _(event: TurnHandedOff, at: Entry) -> Iterator[Change]:
    # The model's words as it asked for a person are the turn's reply, like a completed turn's.
    if event.reply:
        yield _message(at, message_id=event.message_id, role="assistant", text=event.reply, author="")
        yield Change("conversations", (at.conversation_id,), incr={"message_count": 1})


@projection.handles(ConversationCompleted)
def _(event: ConversationCompleted, at: Entry) -> Iterator[Change]:
    yield Change("conversations", (at.conversation_id,), set={"status": "completed", "completed_at": at.created_at})


@projection.handles(ParticipantAdded)
def _(event: ParticipantAdded, at: Entry) -> Iterator[Change]:
    yield Change("conversations", (at.conversation_id,), set={"visibility": "shared"})


# --- human handoff: who answers, the transcript's lines about it, and the messages under it --------


def _control(at: Entry, mode: str, **values) -> Change:
    return Change("conversations", (at.conversation_id,), set={"control_mode": mode, "control_since": at.created_at, **values})


def _line(at: Entry, kind: str, *, staff: str = "", name: str = "", text: str = "") -> Change:
    return Change(
        "control_changes",
        (f"{at.conversation_id}:{at.seq}",),
        create={"id": f"{at.conversation_id}:{at.seq}", "seq": at.seq, "kind": kind, "staff": staff, "name": name,
                "text": text, "created_at": at.created_at},
    )


@projection.handles(HandoffRequested)
def _(event: HandoffRequested, at: Entry) -> Iterator[Change]:
    yield _control(at, "queued", control_staff="", control_name="", control_requested_at=at.created_at,
                   control_reason=event.reason)
    yield _line(at, "handoff_requested", text=event.reason)


@projection.handles(ControlTaken)
def _(event: ControlTaken, at: Entry) -> Iterator[Change]:
    # The request's time and reason stay: the holder and the queue show why and since when the customer waited.
    extra = {"control_reason": event.reason} if event.reason else {}
    yield _control(at, "human", control_staff=event.staff, control_name=event.name, **extra)
    yield _line(at, "control_taken", staff=event.staff, name=event.name, text=event.reason)


# Back to the agent: the request, and the address left for its reply, are over.
_TO_AGENT = {"control_staff": "", "control_name": "", "control_requested_at": None, "control_reason": "", "control_email": "",
             "control_email_persona": ""}


@projection.handles(ControlReturned)
def _(event: ControlReturned, at: Entry) -> Iterator[Change]:
    yield _control(at, "agent", **_TO_AGENT)
    yield _line(at, "control_returned", staff=event.staff, name=event.name, text=event.note)


@projection.handles(HandoffTimedOut)
def _(event: HandoffTimedOut, at: Entry) -> Iterator[Change]:
    yield _control(at, "agent", **_TO_AGENT)
    yield _line(at, "handoff_timed_out", text=event.message)


@projection.handles(HandoffCancelled)
def _(event: HandoffCancelled, at: Entry) -> Iterator[Change]:
    yield _control(at, "agent", **_TO_AGENT)
    yield _line(at, "handoff_cancelled", staff=event.persona)


@projection.handles(HandoffDetails)
def _(event: HandoffDetails, at: Entry) -> Iterator[Change]:
    told = {"control_reason": event.reason} if event.reason else {}
    left = {"control_email": event.email, "control_email_persona": event.persona} if event.email else {}
    yield Change("conversations", (at.conversation_id,), set={**told, **left})


@projection.handles(CustomerMessage)
def _(event: CustomerMessage, at: Entry) -> Iterator[Change]:
    yield Change("conversations", (at.conversation_id,), set={"last_turn_at": at.created_at}, incr={"message_count": 1})
    yield _message(at, message_id=event.message_id, role="user", text=event.text, author=event.caller)


@projection.handles(StaffMessage)
def _(event: StaffMessage, at: Entry) -> Iterator[Change]:
    yield Change("conversations", (at.conversation_id,), incr={"message_count": 1})
    yield _message(at, message_id=event.message_id, role="staff", text=event.text, author=event.staff, author_name=event.name)


@projection.handles(StaffNote)
def _(event: StaffNote, at: Entry) -> Iterator[Change]:
    # A store of its own, not a message: every customer state and the model's history read chat_messages.
    yield Change("staff_notes", (event.note_id,), create={
        "id": event.note_id, "conversation_id": at.conversation_id, "seq": at.seq, "text": event.text,
        "staff": event.staff, "name": event.name, "created_at": at.created_at,
    })
