"""
Who is calling the API: a workspace API key or a conversation token, never a cookie.

Both arrive as `Authorization: Bearer …`; a conversation token may also come as `?token=` (for
clients that cannot set headers). Session cookies are not read at all, so a cross-site request
that carries a staff cookie is just an unauthenticated request: the API needs no CSRF token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.http import HttpRequest
from django.utils.text import slugify
from ninja.security import APIKeyQuery, HttpBearer

from apps.conversations import tokens
from apps.conversations.errors import BadInput, Forbidden, NotFound
from apps.ledger import identities
from apps.ops import limits
from apps.workspaces.keys import resolve_api_key

# provider:external_id or provider:scope:external_id (PRODUCT.md "persona").


@dataclass(frozen=True)
class Principal:
    """The caller of one request: what it may do and who it acts as."""

    kind: str  # "api_key" | "token"
    id: str  # stable identity for idempotency scopes and rate limits
    persona: str
    edge: str
    conversation_id: str | None  # a token's one conversation; None for an API key
    permissions: frozenset[str]

    @property
    def is_api_key(self) -> bool:
        return self.kind == "api_key"

    def require_api_key(self) -> None:
        """:raises Forbidden: the caller holds a conversation token, not an API key"""
        if not self.is_api_key:
            raise Forbidden("this operation needs a workspace API key")

    def check_conversation(self, conversation_id: str, permission: str = "view") -> None:
        """
        Check that the caller may act on a conversation.

        A token for another conversation learns nothing about this one, not even that it exists.
        :raises NotFound: a token for another conversation
        :raises Forbidden: the token lacks `permission`
        """
        if self.conversation_id is not None and self.conversation_id != str(conversation_id):
            raise NotFound("no such conversation")
        if permission not in self.permissions:
            raise Forbidden(f"this token may not {permission.replace('_', ' ')}")

    def acting_as(self, persona: str | None) -> str:
        """
        Return the persona a write is attributed to.

        An API key may act for any persona it names; a token always acts as its own.
        :raises BadInput: a malformed persona
        :raises Forbidden: a token naming another persona
        """
        if persona is None or persona == self.persona:
            return self.persona
        if not self.is_api_key:
            raise Forbidden("a conversation token acts as its own persona")
        return check_persona(persona)


def check_persona(persona: str) -> str:
    """:raises BadInput: not `provider:external_id` or `provider:scope:external_id`"""
    try:
        identities.parse_persona(persona)
    except identities.InvalidPersona:
        raise BadInput("persona must look like provider:external_id or provider:scope:external_id") from None
    return persona


def api_key_persona(name: str, key_id: int) -> str:
    """The identity an API key acts as when a request names no persona."""
    return f"api:{slugify(name)[:60] or f'key-{key_id}'}"


def client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def resolve(request: HttpRequest, raw: str) -> Principal | None:
    """
    Resolve a bearer credential and count the request against its rate limit.

    :raises RateLimited: the credential used up its window
    """
    now = time.time()
    principal = None
    if raw.startswith("wp_"):
        key = resolve_api_key(raw)
        if key is not None:
            principal = Principal(
                kind="api_key", id=f"key:{key.id}", persona=api_key_persona(key.name, key.id), edge="api",
                conversation_id=None, permissions=frozenset(identities.PERMISSIONS),
            )
    elif raw:
        grant = tokens.resolve(raw)
        if grant is not None:
            principal = Principal(
                kind="token", id=f"token:{grant.token_id}", persona=grant.persona, edge=grant.edge,
                conversation_id=grant.conversation_id, permissions=grant.permissions,
            )
    if principal is not None:
        limits.check_credential(credential=principal.id, now=now)
    return principal


class BearerAuth(HttpBearer):
    """`Authorization: Bearer <API key or conversation token>`."""

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        return resolve(request, token.strip())


class TokenQuery(APIKeyQuery):
    """`?token=<conversation token>`, as in customer links."""

    param_name = "token"

    def authenticate(self, request: HttpRequest, key: str | None) -> Principal | None:
        if not key:
            return None
        principal = resolve(request, key)
        return principal if principal is not None and not principal.is_api_key else None


AUTH = [BearerAuth(), TokenQuery()]
