"""Reads of a conversation's state: what every client shows and resumes from."""

from __future__ import annotations

from typing import Any

from apps.actions.models import ActionLog
from apps.conversations.models import ChatMessage, Conversation
from apps.ledger.store import iso
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.workspaces.queries import workspace_state

KIND_NAMES = {"client_tool": "client_tool", "approval": "approval", "question": "question"}


def _when(value) -> str | None:
    return iso(value) if value else None


def conversation_state(conversation: Conversation, *, after_seq: int = 0) -> dict[str, Any]:
    """
    Return the messages and the reconnect fields of a conversation.

    Messages are only those of committed turns: an assistant message exists only once its turn's
    `turn_complete` committed, so a paused or interrupted turn never shows partial text.
    """
    # Plain tuples, not model instances: a long conversation has thousands of messages and this
    # runs on every page load, poll and websocket push.
    messages = [
        {"id": id_, "role": role, "text": text, "turn_id": turn_id, "author": author, "seq": seq, "created_at": _when(created_at)}
        for id_, role, text, turn_id, author, seq, created_at in ChatMessage.objects.filter(
            conversation_id=conversation.id, seq__gt=after_seq
        ).order_by("seq").values_list("id", "role", "text", "turn_id", "author", "seq", "created_at")
    ]
    run = WorkflowLog.objects.filter(conversation_id=conversation.id).order_by("-dispatched_seq").first()
    pending: list[dict[str, Any]] = []
    answered: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    if run is not None:
        for usage in ToolUsageLog.objects.filter(run_id=run.run_id).order_by("requested_at", "id"):
            item = {
                "call_id": usage.call_id,
                "kind": KIND_NAMES[usage.kind],
                "tool": usage.tool,
                "arguments": usage.arguments,
                "requested_at": _when(usage.requested_at),
            }
            if usage.status == "pending":
                pending.append(item)
            else:
                answered.append(
                    {**item, "status": usage.status, "output": usage.output, "answered_by": usage.answered_by,
                     "answered_at": _when(usage.answered_at)}
                )
        summary = tool_summary(run.run_id)
    return {
        "conversation_id": str(conversation.id),
        "conversation_status": conversation.status,
        "completed_at": _when(conversation.completed_at),
        "message_count": conversation.message_count,
        "seq": conversation.head_seq,
        "messages": messages,
        "run_id": run.run_id if run else None,
        "run_status": run.status if run else None,
        "turn_id": run.turn_id if run else None,
        "quarantined": run.quarantined if run else False,
        "error": run.error if run else "",
        "pending_client_actions": pending,
        "answered_client_actions": answered,
        "tool_summary": summary,
        "progress": [{"text": p["text"], "at": p["at"], "seq": p["seq"]} for p in (run.progress if run else [])],
        # phase, display_phase, conditions, last_turn_at, visibility, participants, memory, artifacts
        **workspace_state(conversation, run=run),
    }


def tool_summary(run_id: str) -> list[dict[str, str]]:
    """Tool names and completion states of a run, from its tool usage and action logs."""
    out = [
        {"tool": u.tool, "kind": u.kind, "state": u.status}
        for u in ToolUsageLog.objects.filter(run_id=run_id).order_by("requested_at", "id")
    ]
    out += [
        {"tool": a.tool, "kind": "server", "state": a.status}
        for a in ActionLog.objects.filter(run_id=run_id).order_by("started_at", "id")
    ]
    return out


def conversation_for(conversation_id: str) -> Conversation | None:
    """Return a conversation by id, or None for an unknown or malformed id."""
    import uuid

    try:
        uuid.UUID(str(conversation_id))
    except ValueError:
        return None
    return Conversation.objects.select_related("assistant").filter(id=conversation_id).first()
