"""
`/v1/agent/conversations/{id}/tokens…`, `…/participants…`, `…/memory…`: who may see and act on a
conversation, and what its agent remembers (docs/people.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from django.utils import timezone
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict, Field

from apps.api.operations import (
    BAD,
    DOCUMENTED_HEADERS,
    ERRORS,
    ConversationId,
    conversation_for,
    principal_of,
)
from apps.api.schemas import ErrorOut, Persona
from apps.conversations import tokens
from apps.conversations.errors import Forbidden, NotFound

router = Router()

Permission = Literal["view", "write", "answer_client_actions", "approve"]


class TokenIn(Schema):
    persona: Persona
    permissions: list[Permission] | None = Field(None, description="default: all the persona was admitted with")
    edge: Literal["link", "widget", "api"] = Field("link", description="where the token will be used")


class ParticipantIn(Schema):
    persona: Persona
    permissions: list[Permission] | None = Field(None, description="default: all; must include view",
                                                 json_schema_extra={"contains": {"const": "view"}})


class ParticipantOut(Schema):
    persona: str
    permissions: list[str] | None = Field(None, description="what the participant may do (admission)")
    visibility: str | None = Field(None, description="the conversation's visibility after admission")
    revoked_tokens: int | None = Field(None, description="tokens revoked by the removal")


class MemoryFact(Schema):
    fact_id: str
    text: str
    persona: str = Field(description="who the fact was remembered for")
    turn_id: str
    remembered_at: str | None


class MemoryClearIn(Schema):
    model_config = ConfigDict(extra="forbid")  # a misspelt field must not mean "clear everything"

    fact_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        None, description="the facts to clear; omitted: all of them"
    )


class MemoryClearOut(Schema):
    cleared: Any = Field(description="the cleared facts")


class TokenOut(Schema):
    token: str
    persona: str
    permissions: list[str]


class RevokeIn(Schema):
    token: Annotated[str, Field(min_length=1, max_length=500)]


class RevokeOut(Schema):
    revoked: bool


@router.post(
    "/agent/conversations/{id}/tokens", response={201: TokenOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Issue a conversation token for a persona", tags=["tokens"], openapi_extra=DOCUMENTED_HEADERS,
)
def issue_token(request: HttpRequest, payload: TokenIn, id: str = ConversationId):
    """
    Issue a token that lets one persona view and act on this conversation (API key).

    Only the owner of a private conversation, or a participant of a shared one (see
    `…/participants`), can get a token, with at most the permissions it was admitted with.
    """
    from apps.people.actions import issue_participant_token

    principal = principal_of(request)
    principal.require_api_key()
    conversation = conversation_for(principal, id)
    issued = issue_participant_token(
        conversation_id=str(conversation.id), persona=payload.persona, by=principal.persona, now=timezone.now(),
        edge=payload.edge, permissions=payload.permissions,
    )
    return Status(201, {"token": issued["token"], "persona": issued["persona"], "permissions": issued["permissions"]})


@router.post(
    "/agent/conversations/{id}/participants",
    response={201: ParticipantOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Admit a participant (makes the conversation shared)", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def add_participant(request: HttpRequest, payload: ParticipantIn, id: str = ConversationId):
    """Admit a persona to the conversation with the given permissions (API key); logged as `participant_added`."""
    from apps.people.actions import add_participant as admit

    principal = principal_of(request)
    principal.require_api_key()
    conversation = conversation_for(principal, id)
    admitted = admit(conversation_id=str(conversation.id), persona=payload.persona, by=principal.persona,
                     now=timezone.now(), permissions=payload.permissions)
    return Status(201, admitted)


@router.post(
    "/agent/conversations/{id}/participants/remove",
    response={200: ParticipantOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Remove a participant and revoke its tokens", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def remove_participant(request: HttpRequest, payload: ParticipantIn, id: str = ConversationId):
    """Remove a participant (API key); every token it holds for this conversation is revoked."""
    from apps.people.actions import remove_participant as remove

    principal = principal_of(request)
    principal.require_api_key()
    conversation = conversation_for(principal, id)
    return remove(conversation_id=str(conversation.id), persona=payload.persona, by=principal.persona, now=timezone.now())


@router.get(
    "/agent/conversations/{id}/memory",
    response={200: list[MemoryFact], frozenset(ERRORS): ErrorOut},
    summary="List what the agent remembers", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def list_memory(request: HttpRequest, id: str = ConversationId):
    """The facts the agent of this conversation remembers (the built-in `remember` tool), oldest first."""
    from apps.workspaces.queries import list_memory as remembered

    principal = principal_of(request)
    return remembered(conversation_for(principal, id))


@router.post(
    "/agent/conversations/{id}/memory/clear",
    response={200: MemoryClearOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Clear remembered facts", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def clear_memory(request: HttpRequest, payload: MemoryClearIn, id: str = ConversationId):
    """Clear all remembered facts, or the named ones; logged as `memory_cleared`; they never reach the model again."""
    from apps.workspaces.actions import clear_memory as forget

    principal = principal_of(request)
    conversation = conversation_for(principal, id, "write")
    return forget(conversation_id=str(conversation.id), persona=principal.persona, now=timezone.now(), fact_ids=payload.fact_ids)


@router.post(
    "/agent/conversations/{id}/tokens/revoke",
    response={200: RevokeOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Revoke a conversation token", tags=["tokens"], openapi_extra=DOCUMENTED_HEADERS,
)
def revoke_token(request: HttpRequest, payload: RevokeIn, id: str = ConversationId):
    """Revoke a token of this conversation (API key, or the token itself, to sign out)."""
    principal = principal_of(request)
    conversation = conversation_for(principal, id)
    grant = tokens.resolve(payload.token)
    if grant is None or grant.conversation_id != str(conversation.id):
        raise NotFound("no such token for this conversation")
    if not principal.is_api_key and principal.id != f"token:{grant.token_id}":
        raise Forbidden("a conversation token can revoke only itself")
    return {"revoked": tokens.revoke(token_id=grant.token_id, now=timezone.now())}
