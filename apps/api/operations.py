"""
What the v1 operations share: the error codes they answer with, their common parameters and headers,
who calls and the conversation the call names.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from ninja import Path

from apps.api.auth import Principal
from apps.conversations import queries
from apps.conversations.errors import NotFound

BAD = {400, 413, 422}
ERRORS = {401, 403, 404, 409, 429}

ConversationId = Path(..., description="the conversation id (UUID); unknown or malformed ids are 404")
RETRY_AFTER = {"Retry-After": {"description": "seconds until the window resets", "required": True, "schema": {"type": "integer"}}}
DOCUMENTED_HEADERS = {"responses": {"429": {"headers": RETRY_AFTER}}}


def linked(status: str, links: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """DOCUMENTED_HEADERS plus OpenAPI links from one response: where its ids lead (clients, schemathesis' stateful phase)."""
    return {"responses": {**DOCUMENTED_HEADERS["responses"], status: {"links": links}}}


def principal_of(request: HttpRequest) -> Principal:
    return request.auth  # type: ignore[attr-defined]


def conversation_id_for(principal: Principal, conversation_id: str, permission: str = "view") -> str:
    """:raises NotFound: a malformed id, or a token for another conversation"""
    try:
        conversation_id = str(uuid.UUID(conversation_id))
    except ValueError:
        raise NotFound("no such conversation") from None
    principal.check_conversation(conversation_id, permission)
    return conversation_id


def conversation_for(principal: Principal, conversation_id: str, permission: str = "view", *, with_assistant: bool = True):
    conversation = queries.conversation_for(conversation_id_for(principal, conversation_id, permission), with_assistant=with_assistant)
    if conversation is None:
        raise NotFound("no such conversation")
    return conversation
