"""`/v1/agent/conversations/{id}/artifacts/…`: the receipt of what a tool produced (docs/people.md)."""

from __future__ import annotations

import re

from django.http import HttpRequest
from django.utils import timezone
from ninja import Path, Router, Schema
from pydantic import ConfigDict, Field

from apps.api.operations import DOCUMENTED_HEADERS, ERRORS, ConversationId, conversation_for, principal_of
from apps.api.schemas import ErrorOut
from apps.conversations.errors import NotFound

router = Router()
_ARTIFACT_ID = re.compile(r"^art_[0-9a-f]{1,40}$")


class ArtifactOut(Schema):
    """An artifact record: what a tool produced, where it came from, and whether it was received."""

    model_config = ConfigDict(extra="allow")

    artifact_id: str
    turn_id: str
    call_id: str
    name: str
    media_type: str
    sha256: str = Field(description="hex SHA-256 of the content")
    size: int
    source: dict[str, str] = Field(description="{identity, revision} of what it was made from")
    status: str = Field(description="created | acknowledged")
    acknowledged_by: str
    acknowledged_at: str | None


@router.post(
    "/agent/conversations/{id}/artifacts/{artifact_id}/ack",
    response={200: ArtifactOut, frozenset(ERRORS | {413, 422}): ErrorOut},
    summary="Acknowledge receipt of an artifact", tags=["artifacts"], openapi_extra=DOCUMENTED_HEADERS,
)
def acknowledge_artifact(
    request: HttpRequest, id: str = ConversationId, artifact_id: str = Path(..., description="`art_…` from the state's artifacts"),
):
    """
    Record that the application received an artifact (`artifact_acknowledged`).

    Acknowledging again returns the artifact unchanged. After a crash, `artifact_recovery` in the
    conversation state tells a missing, a duplicate and an unacknowledged artifact apart.
    """
    from apps.workspaces.actions import acknowledge_artifact as acknowledge

    principal = principal_of(request)
    conversation = conversation_for(principal, id, "write")
    if not _ARTIFACT_ID.match(artifact_id):
        raise NotFound("no such artifact in this conversation")
    return acknowledge(conversation_id=str(conversation.id), artifact_id=artifact_id, persona=principal.persona, now=timezone.now())
