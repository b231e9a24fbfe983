"""
The `memories`, `artifacts` and `closures` stores as a projection of the log (pure: no Django;
docs/people.md).

Registered in `WorkspacesConfig.ready()`; see `apps/ledger/projection.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

from apps.ledger.projection import Change, Entry, Projection
from apps.ledger.types import (
    ArtifactAcknowledged,
    ArtifactCreated,
    ConversationClosed,
    ConversationReopened,
    MemoryCleared,
    MemoryRemembered,
)

projection = Projection({"memories": ("fact_id",), "artifacts": ("artifact_id",), "closures": ("conversation_id", "closed_seq")})


@projection.handles(MemoryRemembered)
def _(event: MemoryRemembered, at: Entry) -> Iterator[Change]:
    yield Change(
        "memories",
        (event.fact_id,),
        create={
            "fact_id": event.fact_id, "run_id": event.run_id, "turn_id": at.turn_id, "call_id": event.call_id,
            "text": event.text, "persona": event.persona, "status": "active",
            "remembered_at": at.created_at, "cleared_by": "", "cleared_at": None,
        },
    )


@projection.handles(MemoryCleared)
def _(event: MemoryCleared, at: Entry) -> Iterator[Change]:
    # The text is blanked in the store; the log keeps what was said, as it keeps every message.
    for fact_id in event.fact_ids:
        yield Change(
            "memories", (fact_id,), set={"status": "cleared", "text": "", "cleared_by": event.cleared_by, "cleared_at": at.created_at}
        )


@projection.handles(ArtifactCreated)
def _(event: ArtifactCreated, at: Entry) -> Iterator[Change]:
    yield Change(
        "artifacts",
        (event.artifact_id,),
        create={
            "artifact_id": event.artifact_id, "run_id": event.run_id, "turn_id": at.turn_id, "call_id": event.call_id,
            "name": event.name, "media_type": event.media_type, "sha256": event.sha256, "size": event.size,
            "path": event.path, "source_identity": event.source_identity, "source_revision": event.source_revision,
            "status": "created", "created_at": at.created_at, "acknowledged_by": "", "acknowledged_at": None,
        },
    )


@projection.handles(ArtifactAcknowledged)
def _(event: ArtifactAcknowledged, at: Entry) -> Iterator[Change]:
    yield Change(
        "artifacts", (event.artifact_id,),
        set={"status": "acknowledged", "acknowledged_by": event.acknowledged_by, "acknowledged_at": at.created_at},
    )


@projection.handles(ConversationClosed)
def _(event: ConversationClosed, at: Entry) -> Iterator[Change]:
    yield Change(
        "closures",
        (at.conversation_id, at.seq),
        create={
            "conversation_id": at.conversation_id, "closed_seq": at.seq, "reason": event.reason, "closed_at": at.created_at,
            "last_turn_at": event.last_turn_at, "idle_timeout_seconds": event.idle_timeout_seconds,
            "reopened_seq": None, "reopened_at": None,
        },
    )


@projection.handles(ConversationReopened)
def _(event: ConversationReopened, at: Entry) -> Iterator[Change]:
    yield Change("closures", (at.conversation_id, event.closed_seq), set={"reopened_seq": at.seq, "reopened_at": at.created_at})
