"""
Accepting the answers a waiting run asked for: a client action's result, an approval, a question's answer.

The check and the write run in one transaction under the conversation's row lock, so two people
answering at once are serialised and the second sees the first's answer. The answer is appended to
the log (`store.append`, which writes the stores), the broadcast of the new head is scheduled, and
once no call is left pending the run goes back to the runner (`actions.kick_after_commit`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any

from django.db import transaction

from apps.agent import runner
from apps.agent.actions import kick_after_commit
from apps.agent.config import tool_by_name
from apps.agent.tools import DECLINED, answer_problem, edit_problem, named_approver
from apps.conversations import actions as conversation_actions
from apps.conversations import broadcast
from apps.conversations.errors import (
    ActionResultConflict,
    ApprovalExpired,
    ApprovalMismatch,
    ApproverRequired,
    BadInput,
    ConversationIsCompleted,
    Forbidden,
    NotFound,
    RunExpired,
    RunNotWaiting,
    WaypointError,
)
from apps.ledger import store
from apps.ledger.identities import PERMISSIONS, is_staff
from apps.ledger.types import ApprovalResponse, ClientResultAccepted, QuestionResponse
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.toolsources.resolve import resolved


@dataclass(frozen=True)
class Acceptance:
    run_id: str
    accepted: list[str]  # call ids newly accepted by this request
    already: list[str]  # call ids whose identical answer was accepted before
    run_resumes: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _approval_output(output: dict[str, Any]) -> dict[str, Any]:
    """An approval's answer as its usage row keeps it: the decision, what was reviewed and any edits."""
    kept = {"decision": output.get("decision"), "reviewed": output.get("reviewed")}
    if output.get("edited_arguments"):
        kept["edited_arguments"] = output["edited_arguments"]
    return kept


def _same_answer(usage: ToolUsageLog, output: Any) -> bool:
    if usage.kind == "approval":
        return isinstance(output, dict) and usage.output == _approval_output(output)
    if usage.kind == "question" and output != DECLINED:
        return isinstance(output, dict) and usage.output == {"answer": output.get("answer")}
    return usage.output == output


def _check_output(usage: ToolUsageLog, output: Any, required_approver: str, persona: str, permissions: frozenset[str],
                  tool: dict[str, Any], today: date) -> None:
    if usage.kind == "approval":
        if "approve" not in permissions:
            raise Forbidden("this persona may not approve")
        if not isinstance(output, dict) or output.get("decision") not in ("approve", "deny"):
            raise BadInput("an approval needs output.decision approve or deny")
        reviewed = output.get("reviewed")
        if not isinstance(reviewed, dict) or not isinstance(reviewed.get("arguments"), dict):
            raise BadInput("an approval needs output.reviewed with the tool and arguments you reviewed")
        if reviewed.get("tool") != usage.tool or reviewed.get("arguments") != usage.arguments:
            raise ApprovalMismatch()
        if usage.approver == "staff" and not is_staff(persona):
            raise ApproverRequired()
        named = named_approver(required_approver, usage.approver)
        if named and persona != named:
            raise Forbidden(f"only {named} may answer this approval")
        if "edited_arguments" in output:
            if output["decision"] != "approve":
                raise BadInput("edited_arguments go with approve: a denial changes nothing")
            if problem := edit_problem(tool, usage.editable, output["edited_arguments"], usage.arguments):
                raise BadInput(problem)
    elif usage.kind == "question":
        if "answer_client_actions" not in permissions:
            raise Forbidden("this persona may not answer questions")
        if output == DECLINED:
            return
        if isinstance(output, dict) and "declined" in output:
            raise BadInput('a declined question is exactly output {"declined": true}')
        if not isinstance(output, dict) or not isinstance(output.get("answer"), str) or not output["answer"].strip():
            raise BadInput('a question needs output.answer as non-empty text, or output {"declined": true} to skip it')
    elif "answer_client_actions" not in permissions:
        raise Forbidden("this persona may not answer client actions")
    elif problem := answer_problem(tool, output, today=today):
        raise BadInput(problem)


def accept_results(
    *, conversation_id: str, run_id: str, results: Any, persona: str, now: datetime,
    permissions: frozenset[str] = frozenset(PERMISSIONS),
) -> Acceptance:
    """
    Accept the first valid result set for a run's pending calls.

    Idempotent for identical outputs. The check and the write happen under the conversation's row
    lock, so two browsers answering at once are serialised and the second sees the first's answer.
    :raises ActionResultConflict: a different output was accepted for one of the calls
    :raises ApprovalMismatch: the reviewed tool or arguments differ from the pending call
    :raises RunExpired: the run's pending request expired (simple runs only)
    :raises ApprovalExpired: the approval expired; one past its time that the clock has not resolved
        yet is resolved as expired first (committed, then raised)
    :raises ApproverRequired: a staff approval answered by someone not on the staff
    :raises BadInput: an output a call cannot take (a date outside its parameter's bounds, say);
        `{"declined": true}` declines a question or client action
    """
    if not isinstance(results, list) or not results:
        raise BadInput("results must be a non-empty list of {call_id, output}")
    seen = set()
    for item in results:
        if not isinstance(item, dict) or not isinstance(item.get("call_id"), str) or "output" not in item:
            raise BadInput("each result needs call_id and output")
        if item["call_id"] in seen:
            raise BadInput(f"call {item['call_id']} appears twice")
        seen.add(item["call_id"])
        conversation_actions.check_clean(item, "a result")
    with transaction.atomic():
        outcome = _accept(conversation_id, run_id, results, persona=persona, permissions=permissions, now=now)
    if isinstance(outcome, WaypointError):
        raise outcome  # after the commit of what it records: an approval that expired is resolved
    return outcome


def _accept(conversation_id: str, run_id: str, results: list[dict[str, Any]], *, persona: str, permissions: frozenset[str],
            now: datetime) -> Acceptance | WaypointError:
    """`accept_results` inside its transaction; an error to raise once what was written commits."""
    conversation = conversation_actions.locked(conversation_id, with_assistant=True)
    if conversation.status == "completed":
        raise ConversationIsCompleted()
    run = WorkflowLog.objects.filter(conversation_id=conversation.id, run_id=run_id).first()
    if run is None:
        raise NotFound("no such run")
    usages = {
        u.call_id: u
        for u in ToolUsageLog.objects.filter(run_id=run_id, call_id__in=[r["call_id"] for r in results])
    }
    required = (run.directives or {}).get("required_approver") or conversation.assistant.config.get("required_approver", "")
    fresh, already = [], []
    for item in results:
        usage = usages.get(item["call_id"])
        if usage is None:
            raise NotFound(f"call {item['call_id']} is not a client action of this run")
        if usage.status == "withdrawn":
            raise RunNotWaiting("This request was withdrawn when the conversation was handed to a person.")
        if usage.status == "pending":
            if usage.kind == "approval" and usage.expires_at and usage.expires_at <= now:
                # Past its time, and the clock has not come by yet: it expires now, as it would have.
                runner.expire_approvals(conversation, run, now=now)
                return ApprovalExpired()
            if run.status == "expired" or (usage.expires_at and usage.expires_at <= now):
                raise RunExpired()
            tool = tool_by_name(resolved(conversation.assistant.config), usage.tool) or {}
            _check_output(usage, item["output"], required, persona, permissions, tool, now.date())
            fresh.append((usage, item["output"]))
        elif usage.status == "expired":
            # An approval the clock resolved, or any request of a simple run that expired as a whole.
            raise ApprovalExpired() if (usage.output or {}).get("decision") == "expired" else RunExpired()
        elif _same_answer(usage, item["output"]):
            already.append(usage.call_id)
        else:
            raise ActionResultConflict(
                "Someone else already answered",
                accepted={"call_id": usage.call_id, "output": usage.output, "answered_by": usage.answered_by,
                          "seq": usage.accepted_seq, "answered_at": usage.answered_at.isoformat() if usage.answered_at else None},
            )
    if not fresh:
        return Acceptance(run_id, [], already, False)
    remaining = set(run.pending) - {u.call_id for u, _ in fresh}
    events = []
    for i, (usage, output) in enumerate(fresh):
        resumes = not remaining and i == len(fresh) - 1
        if usage.kind == "approval":
            events.append(ApprovalResponse(run_id=run_id, call_id=usage.call_id, decision=output["decision"],
                                           reviewed={"tool": output["reviewed"]["tool"], "arguments": output["reviewed"]["arguments"]},
                                           answered_by=persona, run_resumes=resumes,
                                           edited_arguments=output.get("edited_arguments") or {}))
        elif usage.kind == "question":
            declined = output == DECLINED
            events.append(QuestionResponse(run_id=run_id, call_id=usage.call_id, answer="" if declined else output["answer"],
                                           answered_by=persona, run_resumes=resumes, declined=declined))
        else:
            events.append(ClientResultAccepted(run_id=run_id, call_id=usage.call_id, tool=usage.tool, output=output,
                                               answered_by=persona, run_resumes=resumes))
    recorded = store.append(conversation, events, turn_id=run.turn_id, actor=persona, now=now)
    broadcast.on_commit(conversation.id, recorded[-1].seq)
    if not remaining:
        kick_after_commit(str(conversation.id), "after_result_accepted")
    return Acceptance(run_id, [u.call_id for u, _ in fresh], already, not remaining)
