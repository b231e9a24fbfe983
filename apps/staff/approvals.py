"""
Approvals the team gives (PRODUCT.md "Approvals: expiry, edits, approvers"): the **Approvals** queue,
its count in the navigation and a conversation's cards in the inspector, which the signed link of an
`approval.requested` webhook opens (`apps/conversations/tokens.py` `approve_link`).

An approval whose approver is `staff` waits for the team alone; one whose approver is `any` may be
answered by the customer or the team, so it is listed too.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.agent import tools
from apps.agent.config import tool_by_name
from apps.runs.models import ToolUsageLog
from apps.staff.queries.words import waited
from apps.toolsources.resolve import resolved

TEAM = ("staff", "any")


def approvals_count() -> int:
    return ToolUsageLog.objects.filter(kind="approval", status="pending", approver__in=TEAM).count()


def pending_approvals(*, conversation_id: str | None = None, now: datetime | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """The approvals waiting for the team, oldest first, each as its card shows it."""
    now = now or timezone.now()
    rows = ToolUsageLog.objects.filter(kind="approval", status="pending", approver__in=TEAM)
    if conversation_id is not None:
        rows = rows.filter(conversation_id=conversation_id)
    return [card(usage, now=now) for usage in rows.select_related("conversation__assistant").order_by("requested_at", "id")[:limit]]


def card(usage: ToolUsageLog, *, now: datetime) -> dict[str, Any]:
    """What a staff approval card shows of a pending approval: the call in words, its exact arguments, its Edit."""
    assistant = usage.conversation.assistant
    tool = tool_by_name(resolved(assistant.config), usage.tool) or {}
    call = {"call_id": usage.call_id, "kind": "approval", "tool": usage.tool, "arguments": usage.arguments,
            "editable": usage.editable}
    return {
        "usage": usage,
        "conversation": usage.conversation,
        "assistant": assistant,
        "call_id": usage.call_id,
        "run_id": usage.run_id,
        "tool": usage.tool,
        "title": tools.card_title(call, tool),
        "display_name": tools.display_name(tool, usage.tool),
        "arguments_text": json.dumps(usage.arguments, indent=2, sort_keys=True),
        "arguments_json": json.dumps(usage.arguments, sort_keys=True),
        "requested_at": usage.requested_at,
        "waited": waited(now - usage.requested_at),
        "expires_at": usage.expires_at,
        "expires_in": waited(usage.expires_at - now) if usage.expires_at and usage.expires_at > now else "",
        "approver": usage.approver,
        "edit_fields": tools.edit_fields(tool, call),
        "reattempt_of": usage.reattempt_of or None,
    }
