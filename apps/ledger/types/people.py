"""
People, memory and workspace artifacts (docs/people.md): who takes part, what the agent remembers
for them, and the files a conversation's tools made.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.ledger.types.base import EventKind, register


@register("participant_added")
@dataclass(frozen=True)
class ParticipantAdded(EventKind):
    persona: str
    permissions: list
    added_by: str
    again: bool = False  # the persona was a participant before and was removed


@register("participant_removed")
@dataclass(frozen=True)
class ParticipantRemoved(EventKind):
    persona: str
    removed_by: str


@register("participant_token_issued")
@dataclass(frozen=True)
class ParticipantTokenIssued(EventKind):
    persona: str
    token_id: str
    edge: str
    permissions: list
    issued_by: str


@register("memory_remembered")
@dataclass(frozen=True)
class MemoryRemembered(EventKind):
    run_id: str
    call_id: str
    fact_id: str
    text: str
    persona: str = ""  # the caller of the turn whose agent remembered it


@register("memory_cleared")
@dataclass(frozen=True)
class MemoryCleared(EventKind):
    fact_ids: list
    cleared_by: str


@register("artifact_created")
@dataclass(frozen=True)
class ArtifactCreated(EventKind):
    run_id: str
    call_id: str
    artifact_id: str
    name: str
    media_type: str
    sha256: str
    size: int
    path: str  # relative to the conversation's workspace
    source_identity: str
    source_revision: str = ""


@register("artifact_acknowledged")
@dataclass(frozen=True)
class ArtifactAcknowledged(EventKind):
    artifact_id: str
    acknowledged_by: str
