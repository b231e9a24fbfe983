"""
A conversation's lifecycle in its log: started, completed, closed for being idle and reopened, repaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apps.ledger.types.base import EventKind, register


@register("conversation_started")
@dataclass(frozen=True)
class ConversationStarted(EventKind):
    assistant_id: str
    metadata: dict = field(default_factory=dict)
    visibility: str = "private"
    owner: str = ""
    participants: list = field(default_factory=list)


@register("conversation_completed")
@dataclass(frozen=True)
class ConversationCompleted(EventKind):
    run_id: str


@register("conversation_closed")
@dataclass(frozen=True)
class ConversationClosed(EventKind):
    reason: str  # idle
    last_turn_at: str
    idle_timeout_seconds: int


@register("conversation_reopened")
@dataclass(frozen=True)
class ConversationReopened(EventKind):
    closed_seq: int  # the conversation_closed entry this reopens


@register("repair")
@dataclass(frozen=True)
class Repair(EventKind):
    removed: list  # [{"seq", "reason"}]
    reason: str = ""
