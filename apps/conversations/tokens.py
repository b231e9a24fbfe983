"""Conversation tokens: a signed, revocable grant of one persona's access to one conversation."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from apps.conversations import broadcast, statements
from apps.conversations.models import ConversationToken
from apps.ledger.identities import PERMISSIONS

SALT = "waypoint.conversation-token"
APPROVE_LINK_SALT = "waypoint.approve-link"
APPROVE_LINK_LIFETIME = timedelta(hours=24)  # for an approval that does not expire


@dataclass(frozen=True)
class Grant:
    token_id: str
    conversation_id: str
    persona: str
    edge: str
    permissions: frozenset[str]

    def allows(self, permission: str) -> bool:
        return permission in self.permissions


def lifetime() -> timedelta:
    """How long a token lives unused (WAYPOINT_TOKEN_MAX_AGE_DAYS); using it renews it (`token_expiry`)."""
    return timedelta(days=settings.WAYPOINT_TOKEN_MAX_AGE_DAYS)


# A token in use is renewed at most this often: a write per request would cost more than it buys.
RENEW_AFTER = timedelta(hours=1)


def issue(*, conversation_id: str, persona: str, edge: str = "link", permissions: list[str] | None = None,
          now: datetime | None = None) -> str:
    """Create a token for one persona on one conversation and return its signed text."""
    now = now or timezone.now()
    row = ConversationToken.objects.create(
        conversation_id=conversation_id, persona=persona, edge=edge, permissions=permissions or list(PERMISSIONS),
        expires_at=now + lifetime(),
    )
    return signing.dumps({"t": str(row.id)}, salt=SALT, compress=False)


def resolve(raw: str, *, now: datetime | None = None) -> Grant | None:
    """
    Return the grant a token carries, or None when it is forged, malformed, revoked or expired.

    A token in use lives on: once it is an hour into its lifetime, resolving it renews it.
    """
    try:
        token_id = uuid.UUID(signing.loads(raw, salt=SALT)["t"])
    except (signing.BadSignature, KeyError, TypeError, ValueError, AttributeError):
        return None
    now = now or timezone.now()
    found = statements.RESOLVE_TOKEN.rows(token_id, now)
    if not found:
        return None
    [(token, conversation, persona, edge, permissions, expires_at)] = found
    if expires_at - now < lifetime() - RENEW_AFTER:
        statements.RENEW_TOKEN.execute(now + lifetime(), token_id)
    return Grant(str(token), str(conversation), persona, edge, frozenset(permissions))


def revoke(*, token_id: str, now: datetime) -> bool:
    """Revoke a token so that it no longer resolves, and close its open sockets; whether it was live until now."""
    return revoke_where(now=now, id=token_id) > 0


def revoke_where(*, now: datetime, **which) -> int:
    """
    Revoke the live tokens that match `which` (model field lookups); how many were live.

    Their open websockets are closed once the revocation has committed (code 4401): a revoked
    token gets nothing more, on HTTP or on a socket opened before.
    """
    with transaction.atomic():
        live = list(ConversationToken.objects.select_for_update().filter(revoked_at__isnull=True, **which)
                    .values_list("id", "conversation_id"))
        ConversationToken.objects.filter(id__in=[t for t, _ in live]).update(revoked_at=now)
        by_conversation: dict[str, list[str]] = {}
        for token, conversation in live:
            by_conversation.setdefault(str(conversation), []).append(str(token))
        for conversation, ids in by_conversation.items():
            transaction.on_commit(partial(broadcast.tokens_revoked, conversation, ids))
    return len(live)


# --- approve links (PRODUCT.md "Approvals: expiry, edits, approvers") ----------------------------


def approve_link(*, conversation_id: str, run_id: str, call_id: str, expires_at: datetime | None, now: datetime) -> str:
    """
    The signed part of a staff approval's `approve_url`: which approval, and until when the link opens it.

    Valid until the approval expires, or for a day when it does not. It grants nothing by itself:
    it opens the card for a staff member who is logged in.
    """
    until = expires_at if expires_at is not None else now + APPROVE_LINK_LIFETIME
    return signing.dumps({"c": conversation_id, "r": run_id, "k": call_id, "u": int(until.timestamp())},
                         salt=APPROVE_LINK_SALT, compress=True)


def read_approve_link(token: str, *, now: datetime) -> dict[str, str] | None:
    """The approval an approve link names, or None for one that was altered or is past its time."""
    try:
        found = signing.loads(token, salt=APPROVE_LINK_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("u"), int) or found["u"] < now.timestamp():
        return None
    return {"conversation_id": str(found.get("c", "")), "run_id": str(found.get("r", "")), "call_id": str(found.get("k", ""))}
