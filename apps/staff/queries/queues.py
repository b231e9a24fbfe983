"""
The queues the staff work through: conversations waiting for a person, quarantined turns, and the
navigation's counts of each (and of the conversations waiting for your reply).
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from typing import Any

from django.db.models import OuterRef, Subquery

from apps.actions.models import ActionLog
from apps.conversations.models import ChatMessage, Conversation
from apps.ledger.models import Event
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.staff.queries.words import call_words, pretty, waited


def waiting_for_a_person(*, now=None, limit: int = 200) -> list[dict[str, Any]]:
    """
    The conversations waiting for a person (control `queued`), oldest request first, with how long each has waited.

    The index on (control_mode, control_requested_at) finds the few queued among all conversations.
    """
    now = now or datetime.now(UTC)
    queued = list(Conversation.objects.filter(control_mode="queued").select_related("assistant")
                  .order_by("control_requested_at", "id")[:limit])
    ids = [c.id for c in queued]
    last = {}
    for cid, text in (ChatMessage.objects.filter(conversation_id__in=ids, role="user")
                      .order_by("seq").values_list("conversation_id", "text")):
        last[cid] = text
    # Who asked comes from the request's own entry (the projection keeps only its time and reason);
    # the newest request of each conversation is the one it waits on.
    asked = {}
    for cid, payload in (Event.objects.filter(conversation_id__in=ids, kind="handoff_requested")
                         .order_by("seq").values_list("conversation_id", "payload")):
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            request = json.loads(payload)
            asked[cid] = {"source": ASKED_BY.get(request.get("source"), str(request.get("source", ""))),
                          "by": str(request.get("requested_by") or ""),
                          # Whether they were promised a person (None: asked before the entry said).
                          "promised": None if "staff_online" not in request
                          else bool(request["staff_online"] and request.get("within_hours", True))}
    return [{"conversation": c, "assistant": c.assistant, "requested_at": c.control_requested_at, "reason": c.control_reason,
             "waited": waited(now - c.control_requested_at) if c.control_requested_at else "", "last_message": last.get(c.id, ""),
             "asked": asked.get(c.id)}
            for c in queued]


# HandoffRequested.source in words: who pressed or called for a person.
ASKED_BY = {"customer": "The customer", "application": "The application", "model": "The assistant"}


def waiting_count() -> int:
    return Conversation.objects.filter(control_mode="queued").count()


def unanswered_count(me: str) -> int:
    """The conversations `me` holds whose last message is the customer's: each waits for their reply."""
    last_role = ChatMessage.objects.filter(conversation=OuterRef("pk")).order_by("-seq").values("role")[:1]
    return (Conversation.objects.filter(control_mode="human", control_staff=me)
            .annotate(last_role=Subquery(last_role)).filter(last_role="user").count())


def quarantine_count() -> int:
    """The quarantined turns that wait for a decision (the quarantine queue's; a quarantined run is `interrupted`)."""
    return WorkflowLog.objects.filter(status="interrupted", quarantined=True).count()


# --- the quarantine queue -----------------------------------------------------------------------


def quarantine_queue(*, limit: int = 100) -> list[dict[str, Any]]:
    """
    Return the quarantined turns, oldest first, with what is known of the ambiguous action.

    A quarantined run is always `interrupted`, so the status index finds them.
    """
    runs = list(
        WorkflowLog.objects.filter(status="interrupted", quarantined=True)
        .select_related("conversation__assistant")
        .order_by("updated_at", "run_id")[:limit]
    )
    turn_ids = [r.turn_id for r in runs]
    ambiguous = {a.turn_id: a for a in ActionLog.objects.filter(turn_id__in=turn_ids, status="ambiguous").order_by("-started_at")}
    asked = {m.turn_id: m.text for m in ChatMessage.objects.filter(turn_id__in=turn_ids, role="user")}
    items = []
    for run in runs:
        action = ambiguous.get(run.turn_id)
        if action is not None:
            action.arguments_text = pretty(action.arguments)
            tool = next((t for t in run.conversation.assistant.config.get("tools", []) if t["name"] == action.tool), {})
            action.words = call_words(tool, action.tool, action.arguments)
        items.append({"run": run, "conversation": run.conversation, "assistant": run.conversation.assistant,
                      "action": action, "message": asked.get(run.turn_id, ""), "since": _since(run, action)})
    return items


def _since(run: WorkflowLog, action: ActionLog | None) -> str:
    """What happened after the interruption: whether the customer continued, and what became of a re-attempt."""
    if not WorkflowLog.objects.filter(conversation_id=run.conversation_id, dispatched_seq__gt=run.dispatched_seq).exists():
        return "The customer has not continued yet."
    if action is not None:
        repeat = (ActionLog.objects.filter(conversation_id=run.conversation_id, reattempt_of__turn_id=run.turn_id,
                                           reattempt_of__call_id=action.call_id).order_by("-started_at").first())
        if repeat is not None:
            outcome = {"succeeded": "it succeeded", "failed": "it failed", "started": "it is under way"}.get(
                repeat.status, "its outcome is unknown too")
            return (f"The customer continued: a re-attempt went out at {repeat.started_at:%Y-%m-%d %H:%M:%S} "
                    f"under the same idempotency key, and {outcome}.")
        waiting = ToolUsageLog.objects.filter(conversation_id=run.conversation_id, status="pending",
                                              reattempt_of__turn_id=run.turn_id, reattempt_of__call_id=action.call_id)
        if waiting.exists():
            return "The customer continued: a re-attempt waits for approval, under the same idempotency key."
    return "The customer continued; the action has not been tried again."
