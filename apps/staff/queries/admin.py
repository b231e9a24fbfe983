"""The staff panel's administration pages: assistants, API keys and the audit of their changes, personas."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db.models import Count, Max, Q

from apps.agent.models import Assistant
from apps.conversations.models import ConversationToken
from apps.staff.models import StaffAuditLog
from apps.workspaces.models import ApiKey


def assistants() -> list[Assistant]:
    """Every assistant, the demo first, then by name."""
    return list(Assistant.objects.order_by("-is_demo", "name"))


def assistant_for(assistant_id: Any) -> Assistant | None:
    """Return an assistant by id, or None for an unknown or malformed id."""
    try:
        return Assistant.objects.filter(id=uuid.UUID(str(assistant_id))).first()
    except ValueError:
        return None


def editable_config(assistant: Assistant) -> tuple[str, str]:
    """The assistant form's two fields: the configuration JSON without its origins, and the origins."""
    config = {k: v for k, v in assistant.config.items() if k != "allowed_origins"}
    return json.dumps(config, indent=2, ensure_ascii=False), "\n".join(assistant.config.get("allowed_origins", []))


def api_keys() -> list[ApiKey]:
    """Every workspace API key, newest first (their secrets are not stored)."""
    return list(ApiKey.objects.order_by("-created_at", "-id"))


def recent_audit(*, prefix: str, limit: int = 20) -> list[StaffAuditLog]:
    """The latest staff changes whose target starts with `prefix` (`assistant:`, `api_key:`)."""
    return list(StaffAuditLog.objects.filter(target__startswith=prefix).order_by("-created_at", "-id")[:limit])


def personas(*, search: str = "", limit: int = 200) -> list[dict[str, Any]]:
    """
    Return the personas that hold conversation tokens, with their permissions and reach.

    Permissions are the union over each persona's live (not revoked) tokens.
    """
    tokens = ConversationToken.objects.all()
    if search:
        tokens = tokens.filter(persona__icontains=search)
    rows = list(
        tokens.values("persona")
        .annotate(conversations=Count("conversation_id", distinct=True), tokens=Count("id"),
                  revoked=Count("id", filter=Q(revoked_at__isnull=False)), last_seen=Max("created_at"))
        .order_by("-last_seen", "persona")[:limit]
    )
    names = [r["persona"] for r in rows]
    grants: dict[str, set[str]] = {name: set() for name in names}
    edges: dict[str, set[str]] = {name: set() for name in names}
    for persona, permissions, edge in (
        ConversationToken.objects.filter(persona__in=names, revoked_at__isnull=True)
        .values_list("persona", "permissions", "edge").distinct()
    ):
        grants[persona] |= set(permissions or [])
        edges[persona].add(edge)
    for row in rows:
        row["permissions"] = sorted(grants[row["persona"]])
        row["edges"] = sorted(edges[row["persona"]])
        row["provider"] = row["persona"].split(":", 1)[0] if ":" in row["persona"] else ""
    return rows
