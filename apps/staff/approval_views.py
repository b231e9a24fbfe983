"""
The team's approvals in the panel: the **Approvals** queue, an answer from a card (in the queue or
the inspector) and the signed link of an `approval.requested` webhook.
"""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from apps.agent import answers
from apps.agent.config import tool_by_name
from apps.agent.tools import edit_fields, edited_arguments
from apps.conversations import tokens
from apps.conversations.errors import ActionResultConflict, ApprovalExpired, NotFound, WaypointError
from apps.conversations.models import Conversation
from apps.ledger.identities import persona_name
from apps.runs.models import ToolUsageLog
from apps.staff import actions, approvals
from apps.staff.views import _after_control, staff_only
from apps.toolsources.resolve import resolved

QUEUE = "staff/approvals.html"


@staff_only
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    """The approvals waiting for the team, oldest first; live by polling its fragment (`?live=1`)."""
    template = "staff/approvals_live.html" if request.GET.get("live") else QUEUE
    return render(request, template, {"items": approvals.pending_approvals()})


@staff_only
@require_POST
def answer(request: HttpRequest, conversation_id, call_id: str) -> HttpResponse:
    """
    Approve, deny or approve with changes, as the staff member of the request.

    From the queue (`from=queue`) the answer is the queue again; from the inspector, its live
    fragments. A refusal (someone answered first, the approval expired, an edit that does not fit)
    is said in words.
    """
    usage = ToolUsageLog.objects.filter(conversation_id=conversation_id, call_id=call_id, kind="approval",
                                        run_id=request.POST.get("run_id", "")).select_related("conversation__assistant").first()
    error: WaypointError | None = None
    if usage is None:
        error = NotFound("That approval is not in this conversation.")
    else:
        try:
            answers.accept_results(
                conversation_id=str(conversation_id), run_id=usage.run_id,
                results=[{"call_id": call_id, "output": _output(request, usage)}],
                persona=actions.staff_identity(request.user), now=timezone.now(),
            )
        except ActionResultConflict as exc:
            error = exc
            accepted = exc.details.get("accepted") or {}
            exc.message = (f"Someone else already answered: {_decision(accepted.get('output'))} by "
                           f"{persona_name(accepted.get('answered_by') or '') or 'someone'}.")
        except ApprovalExpired as exc:
            error = exc
            exc.message = "This approval expired before your answer: the assistant was told and went on."
        except WaypointError as exc:
            error = exc
    if request.POST.get("from") == "queue":
        items = approvals.pending_approvals()
        context = {"items": items, "notice": error.message if error else ""}
        if request.htmx:
            return render(request, "staff/approvals_live.html", context, status=error.status if error else 200)
        return render(request, QUEUE, context, status=error.status if error else 200)
    return _after_control(request, conversation_id, error=error, refused="Your answer was not recorded.")


def _output(request: HttpRequest, usage: ToolUsageLog) -> dict:
    """The answer a card posted, as `POST …/results` takes it: Edit's fields become `edited_arguments` where they changed."""
    try:
        reviewed = json.loads(request.POST.get("reviewed_arguments", ""))
    except ValueError:
        reviewed = None
    decision = request.POST.get("decision", "")
    output = {"decision": decision, "reviewed": {"tool": usage.tool, "arguments": reviewed}}
    if decision == "approve_with_changes":
        tool = tool_by_name(resolved(usage.conversation.assistant.config), usage.tool) or {}
        call = {"arguments": usage.arguments, "editable": usage.editable}
        edits = edited_arguments(call, edit_fields(tool, call), request.POST)
        output = {**output, "decision": "approve", **({"edited_arguments": edits} if edits else {})}
    return output


def _decision(output) -> str:
    decision = (output or {}).get("decision") if isinstance(output, dict) else None
    if decision == "approve":
        return "approved with changes" if output.get("edited_arguments") else "approved"
    return {"deny": "denied", "expired": "expired"}.get(decision, "answered")


@staff_only
@require_GET
def open_link(request: HttpRequest, token: str) -> HttpResponse:
    """An `approve_url`: the approval's card in its conversation, or a page that says why the link does not open it."""
    found = tokens.read_approve_link(token, now=timezone.now())
    if found is None or not Conversation.objects.filter(id=found["conversation_id"]).exists():
        return render(request, "staff/approve_link_invalid.html", status=404)
    url = reverse("staff:conversation", args=[found["conversation_id"]])
    return redirect(f"{url}#approval-{found['run_id']}-{found['call_id']}")
